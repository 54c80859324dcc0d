package queue

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/store"
)

// What operators' tools read beyond a producer's calls: the queues of a
// namespace and their shapes, and the lease a worker holds on a task. The
// overtake command and package console are built on these alone; a user's
// tool can do what they do.

// Queues returns the names of the queues of namespace that have a stored
// shape, sorted. It SCANs every key of the database (1000 per round
// trip; on a Cluster, every master): it is meant for operators' tools,
// not for a hot path.
func Queues(ctx context.Context, rdb redis.UniversalClient, namespace string) ([]string, error) {
	return store.Queues(ctx, rdb, namespace)
}

// Shape is what every process of one queue must agree on, stored in Redis
// by the first process that opens the queue (see New): the schema
// version of its data, its levels, lowest first, and its classes.
type Shape struct {
	// Schema is the version of the queue's data model.
	Schema int
	// LevelNames are the names of the levels, lowest first; there are
	// as many levels as names.
	LevelNames []string
	// Classes maps the logical priority classes to levels.
	Classes map[string]int
	// Shards is the queue's Config.Shards; 0 for a queue of one shard.
	Shards int
}

// ReadShape returns the shape stored for queue name of namespace, or an
// error wrapping ErrNoQueue when the queue has none, ErrCorrupt when its
// key holds something else. A tool opens a queue it did not configure by
// applying the shape to a Config (Shape.Apply) and passing it to New.
func ReadShape(ctx context.Context, rdb redis.UniversalClient, namespace, name string) (Shape, error) {
	s, err := store.ReadShape(ctx, rdb, namespace, name)
	return Shape(s), err
}

// Apply returns cfg with the levels, level names and classes of s.
func (s Shape) Apply(cfg Config) Config {
	return Config(store.Shape(s).Apply(store.Config(cfg)))
}

// InUse reports whether queue name of namespace holds data of a queue in
// use (tasks of any state, workers, leases, a pause), in one EXISTS: it
// tells a queue that only a version of Overtake recording no shapes
// opened (ReadShape fails with ErrNoQueue) from a name never used.
func InUse(ctx context.Context, rdb redis.UniversalClient, namespace, name string) (bool, error) {
	return store.QueueHasData(ctx, rdb, namespace, name)
}

// TaskDetail is a task's record with what only the queue and its workers
// use, as operators' tools show it: the lease a worker holds on the task
// and the traces of its earlier runs. Handlers get the TaskInfo alone.
type TaskDetail struct {
	TaskInfo
	// Worker is the ID of the worker holding the task's lease
	// (runtime.Config.WorkerID); "" when the task is not leased.
	Worker string
	// Token is the lease's token, which every transition of the leased
	// task presents: a worker whose token is stale changes nothing.
	Token string
	// LeaseDeadline is when the lease expires without a heartbeat, by
	// Redis's clock; then another worker recovers the task. Zero when the
	// task is not leased.
	LeaseDeadline time.Time
	// RunSpans holds the W3C traceparent of the process span of each of
	// the task's earlier runs (the last 16, oldest first), which a run
	// after a preemption or a retry links to.
	RunSpans []string
}

// InspectDetail is Inspect with the task's lease and run spans: the same
// record and errors, read in the same round trip.
func (c *Client) InspectDetail(ctx context.Context, id string) (*TaskDetail, error) {
	t, err := c.s.Inspect(ctx, id)
	return detail(t), err
}

// RunningDetails is Running with each task's lease: up to count leased
// tasks from offset, the lease that expires first first, and how many
// are leased in all.
func (c *Client) RunningDetails(ctx context.Context, offset, count int64) ([]*TaskDetail, int64, error) {
	ts, n, err := c.s.Running(ctx, offset, count)
	if ts == nil {
		return nil, n, err
	}
	out := make([]*TaskDetail, len(ts))
	for i, t := range ts {
		out[i] = detail(t)
	}
	return out, n, err
}

// detail copies the store's record t into a TaskDetail (nil for nil).
func detail(t *store.Task) *TaskDetail {
	if t == nil {
		return nil
	}
	return &TaskDetail{TaskInfo: *taskInfo(&t.Info), Worker: t.Worker, Token: t.Token,
		LeaseDeadline: t.LeaseDeadline, RunSpans: t.RunSpans}
}
