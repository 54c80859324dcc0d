// Package testworker plays a worker of a queue in the tests of operators'
// tools (cmd/overtake, console), which may not import the storage layer
// (depguard): it leases tasks, saves checkpoints and results, acks,
// dead-letters and heartbeats with the storage layer's calls, as a
// runtime would, one call at a time and without handlers.
package testworker

import (
	"context"
	"fmt"
	"time"

	"github.com/overtake/overtake/internal/mirror"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// Worker is one worker of a queue, by its ID.
type Worker struct {
	s  *store.Store
	id string
}

// New returns worker id of q's queue.
func New(q *queue.Client, id string) *Worker { return &Worker{s: store.Of(q), id: id} }

// Task is a task the worker leased: its record, and the lease token its
// calls present.
type Task struct {
	*queue.TaskInfo
	// Token is the task's lease token.
	Token string

	t *store.Task
}

// Lease leases up to count tasks (at least 1) at level minLevel or above,
// highest level first.
func (w *Worker) Lease(ctx context.Context, minLevel, count int) ([]*Task, error) {
	res, err := w.s.Lease(ctx, store.LeaseRequest{Worker: w.id, MinLevel: minLevel, Count: count})
	if err != nil {
		return nil, err
	}
	out := make([]*Task, len(res.Tasks))
	for i, t := range res.Tasks {
		out[i] = &Task{TaskInfo: mirror.TaskInfo(&t.Info), Token: t.Token, t: t}
	}
	return out, nil
}

// LeaseOne leases the next task at level minLevel or above, and fails
// unless there is one. On a queue of several shards a lease can come back
// empty with tasks pending (each of its rounds ran later than its views
// allow, on a loaded machine); as a worker's dispatcher would, it tries
// again, up to leaseOneTries times.
func (w *Worker) LeaseOne(ctx context.Context, minLevel int) (*Task, error) {
	var ts []*Task
	var err error
	for try := 0; try < leaseOneTries && err == nil && len(ts) == 0; try++ {
		ts, err = w.Lease(ctx, minLevel, 1)
	}
	if err == nil && len(ts) != 1 {
		err = fmt.Errorf("testworker: %s leased %d tasks, want 1", w.id, len(ts))
	}
	if err != nil {
		return nil, err
	}
	return ts[0], nil
}

// leaseOneTries bounds LeaseOne's leases that come back empty.
const leaseOneTries = 20

// SaveCheckpoint saves data as t's checkpoint and returns its sequence.
func (w *Worker) SaveCheckpoint(ctx context.Context, t *Task, data []byte) (int64, error) {
	return w.s.SaveCheckpoint(ctx, t.ID, t.Token, data)
}

// SaveResult stores data as t's result (handlers.SetResult).
func (w *Worker) SaveResult(ctx context.Context, t *Task, data []byte) error {
	return w.s.SaveResult(ctx, &t.t.Info, t.Token, data)
}

// Ack completes t.
func (w *Worker) Ack(ctx context.Context, t *Task) error { return w.s.Ack(ctx, t.t) }

// DeadLetter dead-letters t with reason.
func (w *Worker) DeadLetter(ctx context.Context, t *Task, reason string) error {
	return w.s.DeadLetter(ctx, t.t, reason)
}

// Counts are a worker's outcomes at one level since its last heartbeat,
// which the heartbeat adds to the fleet's rates.
type Counts struct {
	Processed, Failed, Preempted, SLABreaches int64
}

// Heartbeat tells the fleet the worker is alive with capacity slots until
// ttl from now (0: the queue's LeaseDuration), and adds counts, by level, to
// the fleet's rates.
func (w *Worker) Heartbeat(ctx context.Context, capacity int, ttl time.Duration, counts map[int]Counts) error {
	var lc map[int]store.LevelCounts
	for l, c := range counts {
		if lc == nil {
			lc = map[int]store.LevelCounts{}
		}
		lc[l] = store.LevelCounts{Processed: c.Processed, Failed: c.Failed, Preempted: c.Preempted, SLABreaches: c.SLABreaches}
	}
	_, err := w.s.Heartbeat(ctx, store.Heartbeat{Worker: w.id, Capacity: capacity, TTL: ttl, Counts: lc})
	return err
}
