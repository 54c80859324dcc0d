package runtime

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/mirror"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// heartbeater keeps the worker's record in Redis and extends every lease
// the worker holds, in one Redis call per HeartbeatInterval: the capacity
// it reports, the outcomes counted since the last beat (the fleet's
// rates), and the pools' layout go in; the paused levels, the leases
// Redis no longer holds for this worker and those whose cancel was
// requested come back. While Redis is
// unreachable it leaves the tries to the dispatcher's probe (outage.go),
// and sends the heartbeat it missed as soon as Redis answers.
type heartbeater struct {
	loops    startStop
	eng      *store.Store
	worker   string
	interval time.Duration
	log      *zap.Logger
	held     leaseHolder
	counts   *outcomeCounts
	redis    *redisWatch
}

// leaseHolder is what the heartbeater needs of the runs the worker holds.
type leaseHolder interface {
	// heldLeases snapshots the held runs' tasks and the capacity to report
	// (0 while draining).
	heldLeases() (leases []*store.Task, capacity int)
	// leaseLost cancels the run of task id with queue.ErrLeaseLost if it
	// holds the lease of token and its handler has not returned.
	leaseLost(id, token string)
	// poolLayout describes the pools (nil without Config.Pools).
	poolLayout() []store.PoolLayout
	// setPaused applies the paused levels a heartbeat read.
	setPaused(m map[int]queue.PauseMode)
}

// start beats every interval until stop.
func (h *heartbeater) start(ctx context.Context) { h.loops.start(ctx, h.loop) }

// stop ends the beats.
func (h *heartbeater) stop() { h.loops.stop() }

// loop sends a heartbeat every interval until ctx ends.
func (h *heartbeater) loop(ctx context.Context) {
	tick := time.NewTicker(h.interval)
	defer tick.Stop()
	missed := false  // a heartbeat failed or was skipped since the last that went through
	refused := false // a shape mismatch was logged since the last that went through
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-h.redis.endedCh():
			if !missed {
				continue
			}
		}
		if h.redis.down() {
			missed = true
			continue
		}
		sent := time.Now()
		err := h.beat(ctx)
		h.redis.called(err, sent)
		if missed = err != nil; missed {
			switch {
			case !errors.Is(err, queue.ErrShapeMismatch):
				h.log.Warn("heartbeat failed", zap.Error(err))
			case !refused:
				// Not transient: until the config or the shape changes,
				// every heartbeat is refused. Said once (the dispatcher
				// says so too), then at debug.
				refused = true
				h.log.Warn("heartbeat refused: queue shape differs from this worker's config", zap.Error(err))
			default:
				h.log.Debug("heartbeat refused: queue shape differs from this worker's config", zap.Error(err))
			}
			continue
		}
		refused = false
	}
}

// beat sends one heartbeat now. Leases reported lost are cancelled with
// queue.ErrLeaseLost: another worker may already run those tasks.
func (h *heartbeater) beat(ctx context.Context) error {
	leases, capacity := h.held.heldLeases()
	return h.send(ctx, leases, capacity)
}

// send reports capacity and extends leases, a snapshot of the held runs'
// tasks that may be stale by the time the answer comes.
func (h *heartbeater) send(ctx context.Context, leases []*store.Task, capacity int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	counts, poolCounts := h.counts.take()
	reply, err := h.eng.Heartbeat(ctx, store.Heartbeat{Worker: h.worker, Capacity: capacity,
		TTL: 2*h.interval + 500*time.Millisecond, Leases: leases, Counts: counts,
		PoolCounts: poolCounts, Pools: h.held.poolLayout()})
	if err != nil {
		h.counts.restore(counts, poolCounts)
		return err
	}
	if reply.Unreached != nil {
		// A sharded queue: the other shards' leases were extended; these
		// shards' are not, and their tasks here may be lost (reported
		// once their shards answer).
		h.log.Warn("heartbeat: some shards did not answer", zap.Error(reply.Unreached))
	}
	if reply.NoFleet {
		// Shard 0 did not answer: the counts go again with the next
		// heartbeat, and the pauses known stay in force.
		h.counts.restore(counts, poolCounts)
	} else {
		h.held.setPaused(mirror.PauseModes(reply.Paused))
	}
	sent := make(map[string]string, len(leases))
	for _, t := range leases {
		sent[t.ID] = t.Token
	}
	for _, id := range reply.Lost {
		// Only the run whose token went out lost its lease: the task may
		// have been requeued and leased here again meanwhile.
		h.held.leaseLost(id, sent[id])
	}
	if c, ok := h.held.(runCanceler); ok {
		// The held leases whose cancel was requested (cancel.go): the
		// durable path, for a cancel whose wake message did not come.
		for _, id := range reply.Canceled {
			c.cancelRequested(id)
		}
	}
	return nil
}

// farewell reports the outcomes counted since the last heartbeat (for
// the fleet's rates) and removes the worker's record, as the runtime
// stops.
func (h *heartbeater) farewell(ctx context.Context) {
	if counts, pools := h.counts.take(); len(counts) > 0 {
		reply, err := h.eng.Heartbeat(ctx, store.Heartbeat{Worker: h.worker, TTL: time.Second, Counts: counts,
			PoolCounts: pools, Pools: h.held.poolLayout()})
		if err == nil && reply.NoFleet {
			err = reply.Unreached // shard 0, which keeps the rates, did not answer
		}
		if err != nil {
			h.log.Warn("could not report the last outcomes for the fleet's rates", zap.Error(err))
		}
	}
	if err := h.eng.Deregister(ctx, h.worker); err != nil {
		h.log.Warn("deregister failed", zap.Error(err))
	}
}
