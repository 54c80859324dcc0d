package queue

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/store"
)

// Client speaks to Redis about the tasks of one queue, as producers and
// operators use it. It is safe for concurrent use and holds no global
// state. Workers run the queue's tasks with package runtime.
type Client struct {
	s *store.Store
}

// shapeTimeout bounds the shape check of New.
const shapeTimeout = 5 * time.Second

// New returns a client for the queue cfg names on rdb, which may be a
// standalone, Sentinel or Cluster client.
//
// Every process of a queue must agree on its shape: Levels, LevelNames and
// Classes. The first process to open a queue records the shape in Redis
// (docs/design.md, "The queue's shape"); New compares cfg with it and fails
// with an error wrapping ErrShapeMismatch, naming both shapes, when they
// differ (ErrSchema when the queue is of another schema version,
// ErrCorrupt when the key holds something else). A Config read back with
// Config and passed to New matches.
//
// The check is one round trip, bounded by 5 s, as New takes no context.
// When Redis cannot be reached in that time or answers with another error,
// New still returns a client, as it did before Redis held shapes (a
// producer may start before Redis), and the check runs again, with the
// call's context, before the client's first Enqueue, EnqueueBatch, Stats,
// Pause or Resume, and the runtime's first lease and heartbeat: those fail
// with the same errors until the shapes agree.
func New(rdb redis.UniversalClient, cfg Config) (*Client, error) {
	s, err := store.New(rdb, store.Config(cfg))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), shapeTimeout)
	defer cancel()
	if err := s.CheckShape(ctx); store.ShapeRefused(err) {
		return nil, err
	}
	return &Client{s: s}, nil
}

// RequeueDead moves dead-lettered task id back to the TAIL of its level
// with a fresh retry budget (Attempt 0). Its last error is kept for
// reference, and so is its checkpoint unless opts.ResetCheckpoint. It
// fails with ErrTaskNotFound when there is no record, ErrNotDead when the
// task is not dead-lettered, and ErrMalformedRecord when the record has no
// usable level (DeleteDead it instead). Nothing changes on failure.
func (c *Client) RequeueDead(ctx context.Context, id string, opts RequeueDeadOptions) error {
	return c.s.RequeueDead(ctx, id, store.RequeueDeadOptions(opts))
}

// DeleteDead deletes dead-lettered task id, its record and its result. It
// fails with ErrTaskNotFound when there is no record and ErrNotDead when
// the task is not dead-lettered; nothing changes then.
func (c *Client) DeleteDead(ctx context.Context, id string) error {
	return c.s.DeleteDead(ctx, id)
}

// Cancel cancels task id, wherever it is. A pending, scheduled or
// retrying task is taken out of its list or set and ends canceled at once:
// State StateCanceled for Inspect, kept for Config.Retention as a done task
// is, counted in LevelStats.Canceled, its checkpoint deleted and its
// uniqueness lock (Unique) released. For a running task the cancel is
// requested, durably in Redis: its handler's context is cancelled with a
// cause matching handlers.ErrCanceled on whichever worker runs it, it has
// the runtime's grace period to return, and the task ends canceled and
// never runs again, whatever happens to its lease meanwhile (its worker
// dies, it is preempted, its handler fails). A handler that succeeded
// before it saw the cancel wins the race: the task is then done, and
// Inspect says which. A task canceled already is no error: Cancel is
// idempotent.
//
// It fails with ErrTaskNotFound for an unknown ID and with an error
// matching ErrTaskFinished, naming the state, for a task done or dead.
func (c *Client) Cancel(ctx context.Context, id string) error {
	_, err := c.s.Cancel(ctx, id)
	return err
}

// Config returns the client's configuration with defaults filled in.
func (c *Client) Config() Config {
	return Config(c.s.Config())
}

// Name returns the queue's name.
func (c *Client) Name() string {
	return c.s.Name()
}

// Levels returns the number of priority levels.
func (c *Client) Levels() int {
	return c.s.Levels()
}

// LevelName returns the name of level l, or its number when out of range.
func (c *Client) LevelName(l int) string {
	return c.s.LevelName(l)
}

// LevelByName returns the level called name (a level name or a number).
func (c *Client) LevelByName(name string) (int, error) {
	return c.s.LevelByName(name)
}

// Enqueue stores t, with its options and then opts, and makes it pending
// at its level (or scheduled, with ProcessAt/ProcessIn). It returns the
// stored record, with its ID.
//
// Enqueue records the producer span "enqueue <queue>/<type>" (a child of the span
// in ctx) with Config.TracerProvider and stores its trace context in the
// record's Headers, so every run of the task joins the producer's trace.
func (c *Client) Enqueue(ctx context.Context, t *Task, opts ...Option) (*TaskInfo, error) {
	var rec store.Task
	st, err := c.s.Enqueue(ctx, t.record(&rec), storeOptions(t.options(opts))...)
	if err != nil {
		return nil, err
	}
	return taskInfo(&st.Info), nil
}

// Check reports whether Enqueue would accept t with opts, without
// enqueueing it or calling Redis: its options resolved against the
// queue's levels, level names and classes, its MaxRetries and Timeout not
// negative, its payload within MaxPayloadBytes. The error is the one
// Enqueue would return (ErrInvalidLevel, ErrInvalidTask,
// ErrPayloadTooLarge, ...). runtime.New checks its periodic tasks so.
func (c *Client) Check(t *Task, opts ...Option) error {
	var rec store.Task
	return c.s.Check(t.record(&rec), storeOptions(t.options(opts))...)
}

// EnqueueBatch enqueues tasks, each with its options and then opts, in
// one script call per 256 tasks, all sent in one pipeline. It returns the
// stored records in order; a task that failed leaves a nil entry, and the
// returned error joins every failure.
func (c *Client) EnqueueBatch(ctx context.Context, tasks []*Task, opts ...Option) ([]*TaskInfo, error) {
	recs, slab := make([]*store.Task, len(tasks)), make([]store.Task, len(tasks))
	for i, t := range tasks {
		recs[i] = t.record(&slab[i])
	}
	out, err := c.s.EnqueueEach(ctx, recs, func(i int) []store.Option { return storeOptions(tasks[i].options(opts)) })
	return taskInfos(out), err
}

// Preemptions returns up to count feed events newer than after (a Seq; ""
// for the newest count), oldest first.
func (c *Client) Preemptions(ctx context.Context, after string, count int64) ([]FeedEvent, error) {
	evs, err := c.s.Preemptions(ctx, after, count)
	return mirrorSlice[FeedEvent](evs), err
}

// Stats returns the depth, in-flight, scheduled and dead counts per level
// in one round trip.
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	st, err := c.s.Stats(ctx)
	return stats(st), err
}

// Depths returns the pending count per level in one round trip.
func (c *Client) Depths(ctx context.Context) (map[int]int64, error) {
	return c.s.Depths(ctx)
}

// Inspect returns the record of task id, or ErrTaskNotFound. A record
// that cannot be decoded is returned with what could be read and an error
// wrapping ErrMalformedRecord (or ErrCorrupt when a key of the task holds
// another type).
//
// The result the task's handler stored (handlers.SetResult) is in
// TaskInfo.Result. It outlives the record: once the task completed and its
// record was deleted, Inspect returns it, for Config.ResultRetention, as a
// task in StateDone with ResultOnly set, which holds only the ID, Type,
// Level, EnqueuedAt and the Result fields (see TaskInfo.ResultOnly).
func (c *Client) Inspect(ctx context.Context, id string) (*TaskInfo, error) {
	t, err := c.s.Inspect(ctx, id)
	if t == nil {
		return nil, err
	}
	return taskInfo(&t.Info), err
}

// DeadTasks returns up to count dead-lettered tasks, oldest first, from
// offset. Records that cannot be decoded are returned with what could be
// read.
func (c *Client) DeadTasks(ctx context.Context, offset, count int64) ([]*TaskInfo, error) {
	ts, err := c.s.DeadTasks(ctx, offset, count)
	return taskInfos(ts), err
}

// Pause stops every worker of the fleet from leasing tasks at level (or at
// every level with AllLevels) from the moment it returns: the lease script
// reads the paused levels with the records it pops (no extra command) and
// puts a paused level's tasks back untouched. Workers are also told on the
// wake channel (and by their next heartbeat), so they stop asking. A paused level still accepts tasks, and no preemption
// happens on its behalf. With PauseWait its running tasks finish; with
// PausePreempt they are preempted (checkpoint saved, requeued at the head
// of their level). The pause is stored in Redis, so it survives worker and
// Redis restarts (with persistence), until Resume. Pausing a paused level
// again changes its mode.
func (c *Client) Pause(ctx context.Context, level int, mode PauseMode) error {
	return c.s.Pause(ctx, level, store.PauseMode(mode))
}

// Resume lets workers lease from level (or every level with AllLevels)
// again; idle workers are woken at once.
func (c *Client) Resume(ctx context.Context, level int) error {
	return c.s.Resume(ctx, level)
}

// Paused returns the paused levels and their modes; levels that are not
// paused are absent.
func (c *Client) Paused(ctx context.Context) (map[int]PauseMode, error) {
	m, err := c.s.Paused(ctx)
	if m == nil {
		return nil, err
	}
	out := make(map[int]PauseMode, len(m))
	for l, mode := range m {
		out[l] = PauseMode(mode)
	}
	return out, err
}

// Running returns up to count leased tasks, from offset in the order of
// their lease deadlines (the lease that expires first first), and how many
// tasks are leased in all. A task whose record cannot be decoded is
// returned with what could be read; one that ended between the two reads
// is left out.
func (c *Client) Running(ctx context.Context, offset, count int64) ([]*TaskInfo, int64, error) {
	ts, n, err := c.s.Running(ctx, offset, count)
	return taskInfos(ts), n, err
}

// PendingPage returns up to count IDs waiting at level from offset (0 is
// the head, the next to run), and the level's length.
func (c *Client) PendingPage(ctx context.Context, level int, offset, count int64) ([]string, int64, error) {
	return c.s.PendingPage(ctx, level, offset, count)
}

// Tasks returns the records of ids in one round trip, in order; IDs
// without a record are left out, and records that cannot be decoded are
// returned with what could be read.
func (c *Client) Tasks(ctx context.Context, ids []string) ([]*TaskInfo, error) {
	ts, err := c.s.Tasks(ctx, ids)
	return taskInfos(ts), err
}

// Workers returns the live workers (at most 1000), by ID.
func (c *Client) Workers(ctx context.Context) ([]WorkerInfo, error) {
	ws, err := c.s.Workers(ctx)
	return mirrorSlice[WorkerInfo](ws), err
}

// Redis returns the underlying Redis client.
func (c *Client) Redis() redis.UniversalClient {
	return c.s.Redis()
}

// ShapeChecked reports whether the client's config was checked against
// the shape the queue holds in Redis, and matched (at New, or at a later
// call when Redis could not be reached then). A runtime made from a
// checked client does not check again.
func (c *Client) ShapeChecked() bool {
	return c.s.ShapeChecked()
}
