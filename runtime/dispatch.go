package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/overtake/overtake/queue"
)

// dispatch is the fetch loop: while slots are free it leases as many tasks
// as there are free slots in one round trip; when none are free and an
// urgent task was announced, it tries to preempt.
func (d *dispatcher) dispatch() {
	defer d.wg.Done()
	defer d.stopCarrying()
	defer d.callers.wait() // the calls in flight launch their tasks first
	bo := backoff{limit: d.cfg.MaxRedisBackoff}
	warned := false // "redis unavailable" was said at warn since the last success
	// notBefore: after a failed call no other goes before it, unless Redis
	// answered meanwhile (lookNow). While an outage lasts (outage.go) the
	// call is a probe.
	var notBefore time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	// polled: the last wait ended on the timer (or this is the first
	// round), so a saturated worker looks for urgent work it was not told
	// about; otherwise it reserves only for an announced level, and a pool
	// that just filled up costs no extra round trip.
	polled := true
	// wokeSince: a kick or the timer woke this loop since the last lease
	// call went out.
	wokeSince := true
	for {
		select {
		case <-d.stopLease:
			return
		default:
		}
		d.startWaiting()
		wait := d.cfg.PollInterval
		woken, mask := d.inbox.take()
		// What the lease calls that ended left: an error backs off, and a
		// queue the last call found drained (no backlog) is not asked
		// again until something else woke this loop (a wake-up, a freed
		// slot, the timer) since the last call went out: a call that ended
		// may predate a task announced while it was in flight.
		out, leasing, backlog := d.book.take()
		err := out.err
		if !out.next.IsZero() {
			wait = min(wait, max(time.Until(out.next), time.Millisecond))
		}
		answered := out.ok
		down, ready := d.redis.down(), !time.Now().Before(notBefore)
		frees := d.slots.frees()
		forcePoll := false // look for urgent work after the wait, whatever ends it
		anyFree := slices.ContainsFunc(frees, func(f int) bool { return f > 0 })
		if anyFree {
			// Not saturated: a lease takes the most urgent tasks itself, so
			// any deference to the fleet ends (with one pool; with several,
			// a saturated pool may still be deferring).
			if len(frees) == 1 {
				d.preemptor.endDeferral()
			}
			if err == nil && !down && ready && (backlog || wokeSince) && d.leaseFree(frees) {
				leasing++
				wokeSince = false
			}
		}
		if err == nil && down && ready && leasing == 0 {
			d.probe() // Redis is unreachable: one PING, not a lease call
			leasing++
		}
		if leasing > 0 {
			// A call in flight brings tasks for the slots it asked for or
			// hands them back: no pool counts as saturated until it ends,
			// and what was announced still counts then.
			d.inbox.keep(woken, mask)
		}
		for p := range frees {
			if err != nil || down || !ready || frees[p] > 0 || leasing > 0 {
				continue
			}
			// Pool p is saturated: an announced level of its band (or, on
			// the slow poll, any: -1) may be worth a reservation.
			announced := d.slots.announcedIn(p, woken, mask)
			if announced < 0 && !polled {
				continue
			}
			if d.reclaim(p, announced, polled) {
				continue
			}
			if !d.preemptor.enabled() {
				continue
			}
			if anyFree && d.slots.pools[p].borrow {
				// p may borrow another pool's free slot: that is for a
				// lease, never a preemption. This look may come before
				// the announcement's kick (select picked a lease call's
				// end, or the kick is still on its way), and wokeSince
				// waits for that kick to lease.
				d.inbox.keep(woken, mask)
				continue
			}
			var preempted bool
			var retryAt time.Time
			preempted, retryAt, err = d.preemptor.try(d.ctx, p, announced)
			answered = answered || err == nil
			if err == nil && preempted {
				d.inbox.raise(int64(announced))
				d.inbox.keep(-1, mask)
				forcePoll, wait = false, 0 // more urgent tasks may wait: try the next victim at once
				break
			}
			if !retryAt.IsZero() {
				wait = min(wait, max(time.Until(retryAt), time.Millisecond))
				forcePoll = true
			}
		}
		if err == nil && wait == 0 {
			continue
		}
		switch {
		case err != nil:
			d.redis.failed(err) // (a lease call or probe did already)
			lvl := zap.WarnLevel
			if d.redis.down() {
				elapsed := d.redis.elapsed()
				wait = bo.nextIn(elapsed)
				if elapsed < fastProbe && warned {
					lvl = zap.DebugLevel // the quick tries of an outage's first seconds: said once
				}
			} else {
				wait = bo.next()
			}
			notBefore = time.Now().Add(wait)
			switch {
			case errors.Is(err, queue.ErrShapeMismatch):
				// Not an outage: the queue's stored levels are not this
				// worker's (checked on its first lease when Redis was down
				// at New and Start did not wait). A worker of another shape
				// must not run: it stops, and Run returns err.
				d.log.Error("queue shape differs from this worker's config; stopping", zap.Error(err))
				d.halt(err)
				return
			case errors.Is(err, queue.ErrCorrupt) || errors.Is(err, queue.ErrSchema):
				// Not an outage: a key of the queue holds the wrong type (or
				// data of another schema). Nothing was changed; an operator
				// must fix it, and the worker keeps trying.
				d.log.Error("corrupt queue data; backing off", zap.Error(err), zap.Duration("backoff", wait))
			case store.SlotMoving(err):
				// Redis answers, refusing every call until the slot has moved.
				d.log.Warn("the queue's cluster slot is migrating; backing off", zap.Error(err), zap.Duration("backoff", wait))
			default:
				d.log.Log(lvl, "redis unavailable; backing off", zap.Error(err), zap.Duration("backoff", wait))
				warned = true
			}
		case answered:
			bo.reset() // only a success does: a call just sent may yet fail
			warned = false
			notBefore = time.Time{}
		case !ready:
			wait = min(wait, max(time.Until(notBefore), time.Millisecond))
		}
		if len(d.inbox.kick) == 0 && leasing == 0 {
			// About to wait: no lease call may come soon to carry the acks
			// of slots freed early, so they go now (and before any lease).
			d.flushCarried()
		}
		timer.Reset(wait)
		polled = false
		select {
		case <-d.stopLease:
			return
		case <-d.inbox.kick:
			wokeSince = true
		case <-d.inbox.leaseDone:
		case <-timer.C:
			polled, wokeSince = true, true
		}
		polled = polled || forcePoll
		if d.inbox.pollNow.Swap(false) { // Redis answered again, or the subscription is back
			polled, wokeSince, notBefore = true, true, time.Time{}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// flushCarried sends the acks queued for a lease call that will not come
// soon. Dispatcher goroutine only, so no lease is sent meanwhile.
func (d *dispatcher) flushCarried() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.eng.FlushCarried(ctx)
}

// stopCarrying ends the early freeing of slots as the dispatcher stops: no
// lease call will carry an ack again.
func (d *dispatcher) stopCarrying() {
	d.slots.stopCarrying() // carryAck sees it before it frees a slot
	d.endDispatch()
	d.flushCarried()
}

// logCorrupt logs the wrong-typed keys a lease call found and went around
// (levels skipped, task keys set aside): corruption for an operator to fix,
// not an outage.
func (d *dispatcher) logCorrupt(res *store.LeaseResult) {
	for _, err := range res.Corrupt {
		d.log.Error("corrupt queue key; leasing goes on without it", zap.Error(err))
	}
	// The lease call dead-lettered these itself: counted and logged like
	// any dead letter.
	for _, sa := range res.SetAside {
		d.done.countDead()
		d.log.Error("task dead-lettered", zap.String("task_id", sa.ID), zap.Int("task_level", sa.Level),
			zap.String("reason", "its record key holds another type (set aside as x:"+sa.ID+")"), zap.Error(sa.Err))
	}
}

// killMalformed dead-letters leased records that could not be decoded, off
// the dispatcher goroutine (a Redis outage would hold it for a lease
// duration); Shutdown waits for them like for handlers.
func (d *dispatcher) killMalformed(res *store.LeaseResult) {
	for _, m := range res.Malformed {
		rn := &run{t: m.Task}
		rn.log.l = d.log.With(zap.String("task_id", m.Task.ID))
		d.workers.track(func() {
			// A record Redis holds that cannot be decoded: corruption.
			if err := d.done.kill(rn, m.Err.Error(), zapcore.ErrorLevel); err != nil {
				d.log.Error("could not dead-letter malformed record", zap.String("task_id", m.Task.ID), zap.Error(err))
			}
		})
	}
}

// startWaiting starts reserved urgent tasks once a slot of their pool is
// free (StartAfterVictim), oldest first.
func (d *dispatcher) startWaiting() {
	for rn := d.slots.nextWaiting(); rn != nil; rn = d.slots.nextWaiting() {
		d.runs.start(rn, true)
	}
}
