package runtime

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// ack records rn's success. Its slot is freed as soon as the ack is
// queued for the dispatcher's next lease call, not once the ack has
// landed: that lease runs the ack before it leases (one round trip ends a
// task and starts the next), so the worker's busy count in Redis never
// shows the slot free before it is. If the carried ack fails (Redis
// unreachable), the run takes its slot back, as if it had never been
// freed, and the ack is retried as any other transition
// (finishWithRetry).
func (r *Runtime) ack(rn *run) error {
	unsure := false // an attempt failed without an answer: it may have landed
	if wait, ok := r.carryAck(rn); ok {
		err := wait(r.dispatchCtx)
		if errors.Is(err, context.Canceled) && r.dispatchCtx.Err() != nil {
			// The dispatcher stopped: no lease call will carry the ack.
			ctx, cancel := context.WithTimeout(context.Background(), r.q.Config().LeaseDuration)
			r.eng.FlushCarried(ctx)
			err = wait(ctx)
			cancel()
		}
		if answeredErr(err) {
			// The lease call or flush that carried it reached Redis: the
			// first call to do so after an outage ends it.
			r.redis.answered()
		}
		if err == nil || errors.Is(err, queue.ErrLeaseLost) {
			return err
		}
		r.mu.Lock()
		if !rn.holdsSlot {
			r.holdSlot(rn) // counted busy again, like the lease Redis still counts
		}
		r.mu.Unlock()
		if !store.SlotMoving(err) { // (finishWithRetry says that one once)
			rn.log.Warn("redis unavailable; retrying ack", zap.Error(err))
		}
		unsure = true
	}
	err := r.finishWithRetry(rn, "ack", func(c context.Context) error {
		err := r.eng.Ack(c, rn.t)
		unsure = unsure || (err != nil && !errors.Is(err, queue.ErrLeaseLost))
		return err
	})
	if unsure && errors.Is(err, queue.ErrLeaseLost) && r.acked(rn) {
		return nil // an earlier attempt landed; only its reply was lost
	}
	return err
}

// acked reports whether rn's task is done in Redis (or gone, acked without
// Retention): after an ack whose reply was lost, carried by a lease call or
// of its own, a retry finds the lease gone although that attempt landed.
// One Inspect, on that failure path only.
func (r *Runtime) acked(rn *run) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, err := r.q.Inspect(ctx, rn.t.ID)
	return errors.Is(err, queue.ErrTaskNotFound) || (err == nil && t.State == queue.StateDone)
}

// carryAck queues rn's ack for the next lease call and frees rn's slot,
// when it can: rn holds a slot and gives way to nothing, the dispatcher
// runs, lease calls carry acks (no Config.Retention), and fewer early acks
// wait than the runtime has slots (each waits in a pool goroutine).
func (r *Runtime) carryAck(rn *run) (wait func(context.Context) error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !rn.holdsSlot || rn.givingWay != nil || r.dispatchCtx.Err() != nil || int(r.early.Load()) >= r.maxEarly() {
		return nil, false
	}
	// Queued before the slot is seen free: a lease call that counts the
	// slot carries the ack.
	if wait, ok = r.eng.CarryAck(rn.t); !ok {
		return nil, false
	}
	r.freeSlot(rn)
	rn.early = true
	r.early.Add(1)
	r.signal()
	return wait, true
}

// maxEarly bounds the runs whose slot was freed before their ack landed:
// the slots configured now, at most Config.earlyMax. Caller holds mu.
func (r *Runtime) maxEarly() int {
	n := 0
	for p := range r.pools {
		n += r.sizeOf(p)
	}
	return min(n, r.cfg.earlyMax())
}

// maxCarried is the most acks one lease call carries (queue's batch).
const maxCarried = 256

// releaseUnique releases the uniqueness lock of rn's task (queue.Unique)
// once it succeeded, so that an equal task may be enqueued at once; a
// task that is not unique costs nothing. If Redis does not answer, the
// lock stays until its time to live ends.
func (r *Runtime) releaseUnique(rn *run) {
	if rn.t.Headers[store.UniqueHeader] == "" {
		return
	}
	ctx, cancel := context.WithTimeout(r.baseCtx, r.q.Config().LeaseDuration)
	defer cancel()
	if err := r.eng.ReleaseUnique(ctx, rn.t); err != nil {
		rn.log.Warn("could not release the uniqueness lock; it lasts until its ttl ends", zap.Error(err))
	}
}
