package queue

import "github.com/overtake/overtake/internal/store"

// The queue's types are those of its storage layer (package
// internal/store, which also serves the runtime); these names are how
// users spell them.
type (
	// Config configures a Client. The zero value is usable: WithDefaults
	// fills in the rest. Every process of one queue must agree on Levels,
	// LevelNames and Classes.
	Config = store.Config
	// TaskInfo is a task's record as handlers and operators read it: what
	// the producer set at enqueue (type, payload, options) and what the
	// queue maintains since (state, level, attempts, preemptions,
	// recoveries, checkpoint, times, last error). It is read-only:
	// changing a field changes nothing in Redis.
	TaskInfo = store.Info
	// State is where a task is in its lifecycle.
	State = store.State
	// Option sets a property of a task at enqueue.
	Option = store.Option
	// Stats is a snapshot of the queue per level (Client.Stats).
	Stats = store.Stats
	// LevelStats are one level's counts in Stats.
	LevelStats = store.LevelStats
	// Rates are processing rates over the last RateWindow.
	Rates = store.Rates
	// WorkerInfo describes one live worker (Client.Workers).
	WorkerInfo = store.WorkerInfo
	// WorkerPool is one slot pool of a worker in WorkerInfo.
	WorkerPool = store.WorkerPool
	// FeedEvent is one event of the preemption feed (Client.Preemptions).
	FeedEvent = store.FeedEvent
	// FeedKind says what a FeedEvent records.
	FeedKind = store.FeedKind
	// PauseMode is how a level is paused (Client.Pause).
	PauseMode = store.PauseMode
	// RequeueDeadOptions tune Client.RequeueDead.
	RequeueDeadOptions = store.RequeueDeadOptions
)

// The states a task record can be in. A task is in exactly one of them.
const (
	StatePending   = store.StatePending   // waiting in its level's list
	StateActive    = store.StateActive    // leased by a worker
	StateScheduled = store.StateScheduled // delayed: waits in the scheduled set until due
	StateRetry     = store.StateRetry     // failed, waits in the scheduled set for its backoff
	StateDone      = store.StateDone      // finished; kept only while retention lasts
	StateDead      = store.StateDead      // dead-lettered with a reason
)

// The kinds of FeedEvent.
const (
	FeedPreempt = store.FeedPreempt // a worker reserved an urgent task for a victim
	FeedGaveWay = store.FeedGaveWay // the preempted task was requeued
	FeedResumed = store.FeedResumed // the preempted task was leased again
)

// DefaultMaxRetries is the retry budget of a task enqueued without MaxRetries.
const DefaultMaxRetries = store.DefaultMaxRetries

// AllLevels selects every level of the queue in Pause and Resume.
const AllLevels = store.AllLevels

// RateWindow is the window over which Stats reports processing rates.
const RateWindow = store.RateWindow

// The modes of Pause.
const (
	// NotPaused is the mode of a level that is not paused.
	NotPaused = store.NotPaused
	// PauseWait stops leasing from the level and lets its running tasks
	// finish.
	PauseWait = store.PauseWait
	// PausePreempt also preempts the level's running tasks: each saves its
	// checkpoint and goes back to the head of its level, to resume from
	// there after Resume.
	PausePreempt = store.PausePreempt
)
