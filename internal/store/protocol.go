package store

// The types of the calls workers make (lease, reserve, heartbeat,
// requeue): what package runtime sends and gets back.

import (
	"errors"
	"time"
)

// Errors of the runtime's calls.
var (
	// ErrFreeSlotInFleet is returned by Reserve when a live worker in the
	// fleet has a free slot, so nothing must be preempted.
	ErrFreeSlotInFleet = errors.New("overtake: a worker in the fleet has a free slot")
	// ErrLowerVictimElsewhere is returned by Reserve when another worker
	// runs a preemptible task of a lower level than the offered victim, or
	// of its level and preempted fewer times.
	ErrLowerVictimElsewhere = errors.New("overtake: a lower-priority victim runs elsewhere in the fleet")
	// ErrNoTask is returned when no task is available.
	ErrNoTask = errors.New("overtake: no task available")
)

// LeaseRequest asks for up to Count tasks for Worker.
type LeaseRequest struct {
	// Worker is the ID of the leasing worker (see Heartbeat).
	Worker string
	// Count is how many tasks to lease at most. Defaults to 1.
	Count int
	// MinLevel leases only tasks at this level or above.
	MinLevel int
	// Skip lists levels not to lease from (paused levels, see Pause).
	Skip []int
	// Groups, when set, replace Count and MinLevel: each group takes up to
	// its Count tasks from its Levels, highest level first, in order, all
	// in the one round trip (a runtime's dedicated pools). A Spare group
	// takes up to what the counted groups before it left untaken
	// (borrowing idle slots). LeaseResult.GroupCounts says how many each
	// group took; Tasks come group by group.
	Groups []LeaseGroup

	// by is the time (Unix ms, the scripts' clock) after which the call
	// leases nothing: the second step of a lease on a queue of several
	// shards (shards_lease.go).
	by int64
	// view asks the call for the shard's view after it (LeaseResult.view).
	view bool
}

// LeaseGroup is one band of levels of a LeaseRequest and how many tasks it
// may take.
type LeaseGroup struct {
	Levels []int
	Count  int
	Spare  bool
	// Pool is the worker's slot pool (Heartbeat.Pools, numbered from 1)
	// whose slots the group's tasks take; a spare group's tasks take the
	// slots the counted groups before it left free, in order. 0: none.
	Pool int
	// resumed: the group takes only tasks at its level's head that ran
	// before (preempted ones), up to Count, never a fresh one (a sharded
	// lease's allocation of resumed heads, shards_alloc.go: another worker
	// may have taken them since the view).
	resumed bool
}

// LeaseResult is what one lease call got.
type LeaseResult struct {
	// Tasks are the leased tasks, highest level first.
	Tasks []*Task
	// Malformed are leased records that could not be decoded; each holds
	// the ID and token it could read and an error wrapping
	// ErrMalformedRecord. The caller dead-letters them (DeadLetter).
	Malformed []Malformed
	// Corrupt describes keys found holding the wrong type: levels skipped,
	// task keys set aside. Each wraps ErrCorrupt and names the key; the
	// caller logs them as corruption, not as an outage.
	Corrupt []error
	// SetAside are the tasks this call dead-lettered because their record
	// key held another type (renamed x:<id>); each also has its entry in
	// Corrupt. The caller counts them as dead letters.
	SetAside []SetAside
	// GroupCounts is how many tasks each of LeaseRequest.Groups took.
	GroupCounts []int
	// NextDue is when the earliest scheduled task becomes due or the
	// earliest lease expires, zero if none: an idle worker need not look
	// again before then unless woken. A lease of a queue of several shards
	// whose rounds all came too late for tasks it saw pending sets it to
	// now: look again at once.
	NextDue time.Time
	// view is the shard's view after the call, when LeaseRequest.view
	// asked for it: per level its length and resumed heads (view.lua).
	view []int64
	// at is when the call ran, on the script's clock (ms).
	at int64
}

// SetAside is a task a lease call dead-lettered at Level because its
// record key held another type; Err wraps ErrCorrupt and names the key.
type SetAside struct {
	ID    string
	Level int
	Err   error
}

// Malformed is a leased record that could not be decoded.
type Malformed struct {
	Task *Task
	Err  error
}

// ReserveRequest asks to lease one urgent task for a saturated worker that
// will preempt Victim, its lowest preemptible running task, if it gets one.
type ReserveRequest struct {
	Worker string
	// VictimID and VictimLevel name the task the caller will preempt.
	VictimID    string
	VictimLevel int
	// MinLevel is the lowest level worth preempting for (VictimLevel+1 or
	// more).
	MinLevel int
	// MinRunTime, MaxPreemptions and NeverPreempted mirror the preemption
	// policy, so the script judges other workers' tasks as the caller
	// judges its own. MaxPreemptions < 0 means no limit.
	MinRunTime     time.Duration
	MaxPreemptions int
	NeverPreempted []int
	// NeverPreempt lists arriving levels that never preempt; they are not
	// reserved.
	NeverPreempt []int
	// Skip lists levels not to reserve from (paused levels, other pools'
	// levels).
	Skip []int
	// Pool is the slot pool of the caller (see Heartbeat.Pools, numbered
	// from 1) whose slot the reserved task takes (the victim's); 0: none.
	Pool int
	// IgnoreFleet skips the fleet checks (a free slot or a lower victim on
	// another worker): the caller deferred to the fleet long enough (see
	// preempt.Policy) and preempts its own victim anyway. The victim still
	// leaves the fleet's running set, and a task is still taken before
	// anything is preempted.
	IgnoreFleet bool

	// fleet is the fleet outside the reserving shard (a queue of several
	// shards; set by Reserve).
	fleet *fleetView
	// by: on a queue of several shards, the reservation leases nothing
	// later than this (ms, the script's clock; 0: no bound), as a sharded
	// lease's calls (LeaseRequest.by): its shard was chosen from views
	// read shardLeaseWindow before (set by Reserve).
	by int64
}
