package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"errors"
	"time"

	"github.com/overtake/overtake/internal/telemetry"

	"go.uber.org/zap"

	"github.com/overtake/overtake/queue"
)

// heartbeatLoop refreshes the worker record and extends every lease this
// worker holds, in one Redis call per interval, until the runtime stops.
// While Redis is unreachable it leaves the tries to the dispatcher's probe
// (outage.go), and sends the heartbeat it missed as soon as Redis answers.
func (r *Runtime) heartbeatLoop() {
	defer r.loops.Done()
	tick := time.NewTicker(r.cfg.HeartbeatInterval)
	defer tick.Stop()
	missed := false  // a heartbeat failed or was skipped since the last that went through
	refused := false // a shape mismatch was logged since the last that went through
	for {
		select {
		case <-r.baseCtx.Done():
			return
		case <-tick.C:
		case <-r.redis.endedCh():
			if !missed {
				continue
			}
		}
		if r.redis.down() {
			missed = true
			continue
		}
		sent := time.Now()
		err := r.heartbeat(r.baseCtx)
		r.redis.called(err, sent)
		if missed = err != nil; missed {
			switch {
			case !errors.Is(err, queue.ErrShapeMismatch):
				r.log.Warn("heartbeat failed", zap.Error(err))
			case !refused:
				// Not transient: until the config or the shape changes,
				// every heartbeat is refused. Said once (the dispatcher
				// says so too), then at debug.
				refused = true
				r.log.Warn("heartbeat refused: queue shape differs from this worker's config", zap.Error(err))
			default:
				r.log.Debug("heartbeat refused: queue shape differs from this worker's config", zap.Error(err))
			}
			continue
		}
		refused = false
	}
}

// heartbeat sends one heartbeat. Leases reported lost are cancelled with
// queue.ErrLeaseLost: another worker may already run those tasks.
func (r *Runtime) heartbeat(ctx context.Context) error {
	r.mu.Lock()
	leases := make([]*store.Task, 0, len(r.runs))
	for _, rn := range r.runs {
		leases = append(leases, rn.t)
	}
	capacity := r.Concurrency()
	if r.draining {
		capacity = 0
	}
	r.mu.Unlock()
	return r.sendHeartbeat(ctx, leases, capacity)
}

// sendHeartbeat reports capacity and extends leases, a snapshot of the held
// runs' tasks that may be stale by the time the answer comes.
func (r *Runtime) sendHeartbeat(ctx context.Context, leases []*store.Task, capacity int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	counts, poolCounts := r.takeCounts()
	reply, err := r.eng.Heartbeat(ctx, store.Heartbeat{Worker: r.cfg.WorkerID, Capacity: capacity,
		TTL: 2*r.cfg.HeartbeatInterval + 500*time.Millisecond, Leases: leases, Counts: counts,
		PoolCounts: poolCounts, Pools: r.poolLayout()})
	if err != nil {
		r.restoreCounts(counts, poolCounts)
		return err
	}
	r.setPaused(reply.Paused)
	lost := reply.Lost
	sent := make(map[string]string, len(leases))
	for _, t := range leases {
		sent[t.ID] = t.Token
	}
	for _, id := range lost {
		r.mu.Lock()
		rn := r.runs[id]
		ending := rn != nil && rn.ending
		r.mu.Unlock()
		// Only the run whose token went out lost its lease: the task may
		// have been requeued and leased here again meanwhile. A run whose
		// handler returned is not cancelled: its outcome may just have
		// landed (an ack carried by a lease call), else its transition
		// gets queue.ErrLeaseLost by itself.
		if rn != nil && rn.t.Token == sent[id] && !ending {
			// r.log, not rn.log: the dispatcher may be setting that up.
			r.log.Error("lease lost; cancelling the task", telemetry.TaskFields(rn.t.ID, rn.t.Type, rn.t.Level)...)
			rn.cancel(queue.ErrLeaseLost)
		}
	}
	return nil
}
