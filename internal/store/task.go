package store

import (
	"time"
)

// State is where a task is in its lifecycle.
type State string

// The states a task record can be in. A task is in exactly one of them.
const (
	StatePending   State = "pending"   // waiting in its level's list
	StateActive    State = "active"    // leased by a worker
	StateScheduled State = "scheduled" // delayed: waits in the scheduled set until due
	StateRetry     State = "retry"     // failed, waits in the scheduled set for its backoff
	StateDone      State = "done"      // finished; kept only while retention lasts
	StateDead      State = "dead"      // dead-lettered with a reason
	StateCanceled  State = "canceled"  // canceled (Cancel); kept only while retention lasts
)

// Info is a task's record as handlers and operators read it: what the
// producer set at enqueue and what the queue maintains since. It is
// read-only: changing a field changes nothing in Redis.
//
// queue.TaskInfo is its public twin: the same fields in the same order,
// so a *Info converts to a *queue.TaskInfo with no copy (queue/mirror.go,
// internal/mirror). A field added here is added there, with its
// documentation for users; queue's TestTypesMirrorStore fails until it
// is. The same holds for State, Stats, LevelStats, Rates, WorkerInfo,
// WorkerPool, FeedEvent, FeedKind, PauseMode and RequeueDeadOptions.
type Info struct {
	// ID identifies the task within its queue.
	ID string
	// Type selects the handler.
	Type string
	// Payload is opaque to Overtake.
	Payload []byte
	// Level is the priority level, 0..Levels-1; higher is more urgent. It
	// grows when the task ages (Config.AgeAfter).
	Level int
	// OriginalLevel is the level the task was enqueued at. It differs from
	// Level once the task aged.
	OriginalLevel int
	// Class is the logical priority class the task was enqueued with, if
	// any ("paying", "free").
	Class string
	// Headers carries propagation data such as W3C trace context, and for
	// a unique task (the Unique option) "overtake-unique", the digest that
	// names its lock.
	Headers map[string]string
	// MaxRetries is how many failed attempts are retried before the task
	// is dead-lettered; 0 means none.
	MaxRetries int
	// Timeout bounds one run of the handler. Zero means none.
	Timeout time.Duration
	// NotPreemptible keeps a running task from being displaced by more
	// urgent work.
	NotPreemptible bool
	// State is the lifecycle state when the record was read.
	State State
	// Attempt counts failed attempts so far (a preemption is not one).
	Attempt int
	// Preemptions counts how often the task gave way to more urgent work.
	Preemptions int
	// Recoveries counts how often the task was recovered after its
	// worker's lease expired.
	Recoveries int
	// EnqueuedAt is when the task was first enqueued.
	EnqueuedAt time.Time
	// ReadyAt is when the task last became pending (enqueue, retry due,
	// requeue); wait time is measured from it.
	ReadyAt time.Time
	// ProcessAt is when a scheduled or retrying task becomes due.
	ProcessAt time.Time
	// AgedAt is when the task last moved up a level by aging, zero if it
	// never did.
	AgedAt time.Time
	// LeasedAt is when the current lease began, by Redis's clock (or the
	// injected Config.Clock): with ReadyAt, the task's wait.
	LeasedAt time.Time
	// CancelRequestedAt is when a cancel of the task was requested while
	// it ran (Client.Cancel), by Redis's clock; zero if none was. The run
	// ends canceled when its handler returns, unless it succeeded first.
	CancelRequestedAt time.Time
	// Checkpoint is the state the task saved last, nil if none.
	Checkpoint []byte
	// CheckpointSeq increases with every saved checkpoint.
	CheckpointSeq int64
	// LastError is the error of the last failed attempt, or the reason it
	// was dead-lettered.
	LastError string
	// Result is what the task's handler stored last with
	// handlers.SetResult, nil if none. It is kept for
	// Config.ResultRetention after it was written, also after the task
	// completed and its record was deleted (Inspect then returns the task
	// as done with ResultOnly set).
	Result []byte
	// ResultAt is when Result was stored; zero without one.
	ResultAt time.Time
	// ResultExpiresAt is when Result will be deleted; zero without one.
	ResultExpiresAt time.Time
	// ResultOnly says that the task's record is gone (it completed and
	// was deleted at the ack, or after Config.Retention) and only its
	// retained result was found (Inspect). Then State is done and only ID,
	// Type, Level and OriginalLevel (both the level the result was stored
	// at), EnqueuedAt and ReadyAt (both the enqueue time) and the Result
	// fields are set; every other field is zero, whatever the task had
	// (its Payload, Headers, MaxRetries, Attempt, ...).
	ResultOnly bool
}

// RetriesLeft reports whether a task that has failed Attempt times may be
// retried once more after its current attempt fails.
func (t *Info) RetriesLeft() bool { return t.Attempt < t.MaxRetries }

// Task is the store's record of a task: its Info and the internals of its
// lease, which only the store and the runtime use. The store's calls take
// a Task at enqueue (Type, Payload and the option fields set) and return
// one from lease and inspection.
type Task struct {
	Info
	// Worker is the ID of the worker holding the lease, if active.
	Worker string
	// Token is the lease token; every transition of an active task
	// presents it (fencing).
	Token string
	// LeaseDeadline is when the current lease expires (Redis's clock).
	LeaseDeadline time.Time
	// RunSpans holds the W3C traceparent of the process span of each of
	// the task's earlier runs (the last 16, oldest first), so a
	// run after a preemption or a retry links to them. The runtime adds the
	// running span; a retry, a dead letter and a requeue store the list.
	RunSpans []string

	// unique is the Unique option's time to live, zero without it;
	// schedule, spec and tick are the Tick option's, "" and 0 without
	// it. Set at enqueue only, never read back.
	unique         time.Duration
	schedule, spec string
	tick           int64
	// clearResult says the ID was the caller's (not generated), so an
	// earlier task of that ID may have left a result for the enqueue
	// script to delete. Set at enqueue only.
	clearResult bool
	// avoid names the shards a generated ID must not hash to: their
	// masters just refused this task's enqueue (Store.Enqueue). Set at
	// enqueue only.
	avoid []bool
}

// NewTask returns a task of the given type and payload at level 0, with
// DefaultMaxRetries and the other defaults (the zero values).
func NewTask(typ string, payload []byte) *Task {
	return &Task{Info: Info{Type: typ, Payload: payload, MaxRetries: DefaultMaxRetries}}
}

// DefaultMaxRetries is the retry budget of a task enqueued without MaxRetries.
const DefaultMaxRetries = 25
