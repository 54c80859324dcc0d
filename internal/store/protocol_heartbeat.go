package store

import "time"

// Heartbeat is one worker's periodic report.
type Heartbeat struct {
	// Worker is the worker's ID, unique in the fleet.
	Worker string
	// Capacity is how many tasks the worker runs at once; free slots are
	// Capacity minus the leases it holds. Zero means it takes no work
	// (shutting down), so the fleet does not count it as free.
	Capacity int
	// TTL is how long the worker counts as alive without another
	// heartbeat. Defaults to LeaseDuration.
	TTL time.Duration
	// Leases are the tasks the worker holds; their leases are extended.
	Leases []*Task
	// Counts are the worker's outcomes per level since its previous
	// heartbeat, added to the fleet's processing rates (Stats).
	Counts map[int]LevelCounts
	// PoolCounts are the same outcomes by slot pool name (ValidPoolName),
	// for per-pool rates (Stats.PoolRates).
	PoolCounts map[string]LevelCounts
	// Pools describe the worker's slot pools, if it has several (a
	// runtime's Config.Pools): reservations of other workers then count
	// its free slots and lower tasks only where an urgent task of theirs
	// could use them. Its leases name the pool whose slot each task takes
	// (LeaseGroup.Pool, ReserveRequest.Pool).
	Pools []PoolLayout
}

// PoolLayout is one slot pool of a worker.
type PoolLayout struct {
	// Pool numbers the pool from 1, as in LeaseGroup.Pool.
	Pool int
	// Name names it (ValidPoolName; others are not stored).
	Name string
	// Size is its slots; Levels the levels it runs.
	Size   int
	Levels []int
	// Borrow says its tasks may run in other pools' free slots.
	Borrow bool
}

// HeartbeatReply is what a heartbeat learns.
type HeartbeatReply struct {
	// Lost are the IDs of tasks whose lease was lost: the caller must stop
	// them, as any further transition would fail with ErrLeaseLost.
	Lost []string
	// Paused are the paused levels (see Pause).
	Paused map[int]PauseMode
	// Canceled are the IDs among the extended leases whose cancel was
	// requested (Cancel): the caller cancels their runs; however their
	// lease ends, they end canceled unless they succeed.
	Canceled []string
	// Unreached, on a queue of several shards, is why some shards did not
	// answer (nil: every shard did): the heartbeat holds what the others
	// did, and the leases in those shards were not extended. A heartbeat
	// that no shard answered fails whole.
	Unreached error
	// NoFleet is true when shard 0, which holds the fleet-wide part
	// (capacity, counts, pauses), did not answer though other shards did:
	// the counts were not recorded (send them again) and Paused is empty,
	// not the pauses in force (keep what was known).
	NoFleet bool
}

// RequeueReason says why a running task goes back to its level.
type RequeueReason string

// Reasons for Requeue. Only RequeuePreempted counts a preemption; none
// counts a failed attempt.
const (
	RequeuePreempted RequeueReason = "preempted" // gave way to more urgent work
	RequeueShutdown  RequeueReason = "shutdown"  // its worker is shutting down
	RequeueYield     RequeueReason = "yield"     // the handler asked to be requeued
)

// MaxRunSpans bounds Task.RunSpans: a record remembers the process spans
// of the task's last 16 runs, so a long-lived task's record stays small.
const MaxRunSpans = 16

// ValidPoolName reports whether name can name a slot pool: 1 to 64
// letters, digits, '_', '.' or '-'.
func ValidPoolName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
		default:
			return false
		}
	}
	return true
}

// LevelCounts are outcomes at one level.
type LevelCounts struct {
	Processed   int64 // runs that ended in success or failure (Failed counts a subset)
	Failed      int64 // failed runs (retried or dead-lettered)
	Preempted   int64 // runs preempted for more urgent work
	SLABreaches int64 // tasks leased after waiting longer than their SLA
}

// IsZero reports whether every count is zero.
func (c LevelCounts) IsZero() bool { return c == LevelCounts{} }
