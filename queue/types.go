package queue

import (
	"time"

	"github.com/overtake/overtake/internal/store"
)

// The types operators read: stats, workers, the preemption feed, pauses
// and the dead-letter options. Package internal/store has a twin of each,
// field for field, which the conversions in mirror.go rely on
// (TestTypesMirrorStore).

// Stats is a snapshot of a queue (Client.Stats).
type Stats struct {
	// Queue is the queue's name.
	Queue string
	// Levels are the counts of each level, lowest level first.
	Levels []LevelStats
	// Workers is the number of live workers.
	Workers int64
	// PoolRates are the fleet's rates by slot pool name (runtime pools),
	// over the last RateWindow; empty when no worker has pools.
	PoolRates map[string]Rates
}

// LevelStats counts the tasks of one level in Stats.
type LevelStats struct {
	// Level is the level's number, 0..Levels-1.
	Level int
	// Name is the level's name (Config.LevelNames).
	Name string
	// Pending counts the tasks waiting in the level's list.
	Pending int64
	// Active counts the tasks leased by a worker.
	Active int64
	// Scheduled counts the tasks delayed or waiting for a retry.
	Scheduled int64
	// Dead counts the dead-lettered tasks.
	Dead int64
	// Canceled counts the tasks canceled at this level (Client.Cancel)
	// since the queue began.
	Canceled int64
	// OldestReadyAt is when the task at the head of the list became
	// pending; zero when the level is empty.
	OldestReadyAt time.Time
	// Paused says whether workers lease from the level (see Client.Pause).
	Paused PauseMode
	// Rates are the fleet's outcomes per second at this level over the
	// last RateWindow, as reported in workers' heartbeats.
	Rates Rates
}

// Rates are fleet-wide outcomes per second at one level (or slot pool)
// over RateWindow. Each worker adds its counts to the fleet's in its
// heartbeat, so they reach Stats within a heartbeat interval.
type Rates struct {
	// Processed is the rate of tasks that succeeded.
	Processed float64
	// Failed is the rate of failed attempts (retried or dead-lettered).
	Failed float64
	// Preempted is the rate of tasks that gave way to more urgent work.
	Preempted float64
	// SLABreaches is the rate of tasks that started later than their
	// level's SLA (runtime's Config.SLA).
	SLABreaches float64
}

// RateWindow is the span over which Stats reports processing rates: the
// last six complete 10-second buckets of Redis's clock.
const RateWindow = time.Minute

// WorkerInfo describes one live worker of the fleet, as its last
// heartbeat left it (Client.Workers).
type WorkerInfo struct {
	// ID is the worker's ID (runtime.Config.WorkerID).
	ID string
	// Capacity is how many tasks it runs at once (0: shutting down).
	Capacity int
	// Busy is how many leases it holds.
	Busy int
	// LastHeartbeat is when its last heartbeat arrived (Redis's clock).
	LastHeartbeat time.Time
	// AliveUntil is when it stops counting as alive without another
	// heartbeat.
	AliveUntil time.Time
	// Pools are its slot pools (a runtime's Config.Pools), if any.
	Pools []WorkerPool
}

// WorkerPool is one slot pool of a live worker in WorkerInfo.
type WorkerPool struct {
	// Name is the pool's name.
	Name string
	// Levels are the levels whose tasks the pool runs.
	Levels []int
	// Size is the pool's number of slots.
	Size int
	// Busy is how many of its slots are held.
	Busy int
	// Borrow lets the pool's tasks run in other pools' idle slots.
	Borrow bool
}

// FeedKind says what a FeedEvent records.
type FeedKind string

// The kinds of FeedEvent.
const (
	// FeedPreempt means a worker reserved urgent task ID for victim
	// Victim.
	FeedPreempt FeedKind = "preempt"
	// FeedGaveWay means the preempted task ID was requeued after running
	// Ran.
	FeedGaveWay FeedKind = "gave_way"
	// FeedResumed means the preempted task ID was leased again.
	FeedResumed FeedKind = "resumed"
	// FeedCanceled means task ID ended canceled (Client.Cancel); Worker
	// is the worker that held it, if it ran.
	FeedCanceled FeedKind = "canceled"
)

// FeedEvent is one event of the preemption feed (Client.Preemptions): a
// Redis stream, capped at about 1000 entries, which the scripts append to
// when a reservation takes an urgent task for a victim, when the victim
// gives way and when a preempted task is leased again.
type FeedEvent struct {
	// Seq is the entry's stream ID; pass it to Preemptions as after.
	Seq string
	// Kind says what happened.
	Kind FeedKind
	// At is when it happened, by Redis's clock (or Config.Clock).
	At time.Time
	// ID is the task: the urgent one (FeedPreempt) or the victim.
	ID string
	// Level is the level of task ID.
	Level int
	// Worker is the worker where it happened.
	Worker string
	// Victim is the task the urgent one preempts (FeedPreempt).
	Victim string
	// VictimLevel is Victim's level (FeedPreempt).
	VictimLevel int
	// Waited is how long the urgent task waited before it was reserved
	// (FeedPreempt).
	Waited time.Duration
	// Ran is how long the victim's run lasted until it gave way
	// (FeedGaveWay).
	Ran time.Duration
	// CheckpointSeq is the victim's checkpoint sequence (FeedGaveWay,
	// FeedResumed): 0 means it saved none.
	CheckpointSeq int64
	// Preemptions is how often the task was preempted so far
	// (FeedResumed).
	Preemptions int
}

// PauseMode says what a pause does to the running tasks of a level
// (Client.Pause).
type PauseMode int

// The modes of Pause.
const (
	// NotPaused is the mode of a level that is not paused.
	NotPaused PauseMode = iota
	// PauseWait stops leasing from the level and lets its running tasks
	// finish.
	PauseWait
	// PausePreempt also preempts the level's running tasks: each saves its
	// checkpoint and goes back to the head of its level, to resume from
	// there after Resume.
	PausePreempt
)

// String returns "running", "paused" or "paused (preempt)".
func (m PauseMode) String() string { return store.PauseMode(m).String() }

// AllLevels selects every level of the queue in Pause and Resume.
const AllLevels = -1

// RequeueDeadOptions tune Client.RequeueDead.
type RequeueDeadOptions struct {
	// ResetCheckpoint drops the task's saved checkpoint, so it starts over
	// instead of resuming from where its last attempt stopped. The
	// checkpoint sequence keeps counting.
	ResetCheckpoint bool
}
