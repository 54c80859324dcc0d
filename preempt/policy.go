package preempt

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidPolicy is wrapped by every error Validate returns, so callers
// can test for it with errors.Is.
var ErrInvalidPolicy = errors.New("overtake: invalid preemption policy")

// Defaults that WithDefaults fills into zero fields of a Policy.
const (
	// DefaultMinRunTime is the run time a task needs before it can be
	// preempted. It is zero: urgent work should not wait for a guard, and
	// MaxPreemptions already bounds thrashing. Raise it for tasks that
	// cannot checkpoint quickly after they start.
	DefaultMinRunTime time.Duration = 0
	// DefaultMaxPreemptions is how often one task can be preempted before
	// it runs to completion.
	DefaultMaxPreemptions = 3
	// DefaultMinLevelGap is how many levels an arrival must exceed a
	// victim's level by: 1 means any strictly more urgent level preempts.
	DefaultMinLevelGap = 1
	// DefaultFleetDeferral is how long a saturated worker defers to the
	// fleet before it preempts its own victim anyway.
	DefaultFleetDeferral = 100 * time.Millisecond
)

// DeferForever as Policy.FleetDeferral makes a worker defer to the fleet
// for as long as the fleet looks able to take the urgent task.
const DeferForever time.Duration = -1

// Unlimited as Policy.MaxPreemptions lets a task be preempted any number
// of times.
const Unlimited = -1

// Policy decides which running task, if any, gives way to an arriving
// task. The zero Policy is the default policy: zero fields mean "use the
// default" (WithDefaults shows them).
//
// A Policy is a plain value: it holds no state, starts no goroutines and is
// safe for concurrent use as long as its slices are not modified.
//
// runtime.New validates it; were an invalid policy applied anyway, no task
// would be treated as preemptible.
type Policy struct {
	// MinRunTime is how long a task must have run in its current lease
	// before it can be preempted. Zero means DefaultMinRunTime (also
	// zero); negative is invalid.
	MinRunTime time.Duration

	// MaxPreemptions is how many times one task can be preempted; a task
	// preempted MaxPreemptions times runs to completion.
	// Zero means DefaultMaxPreemptions (3). Unlimited (-1) removes the
	// bound. Other negative values are invalid. To stop preemption
	// altogether, set Disabled; for one task, make it not Preemptible.
	MaxPreemptions int

	// NeverPreempt lists arriving levels that never preempt: tasks of
	// these levels wait for a free slot like everyone else. Levels must
	// not be negative.
	NeverPreempt []int

	// NeverPreempted lists running levels that are never preempted.
	// Levels must not be negative.
	NeverPreempted []int

	// MinLevelGap is how many levels an arriving task must exceed a
	// victim's level by: arriving-victim >= MinLevelGap. Zero means
	// DefaultMinLevelGap (1); negative is invalid. An equal level never
	// preempts, whatever the gap.
	MinLevelGap int

	// FleetDeferral bounds how long a saturated worker defers to the
	// fleet: while another live worker has a free slot, or runs a lower
	// eligible victim (or one of the victim's level preempted fewer
	// times), the worker does not preempt (that worker should take the
	// urgent task, or give way first). Past the bound, counted
	// from the first refusal, it preempts its own victim anyway, so a
	// worker that was killed (its record lives on until its liveness
	// expires), drains, never preempts or waits for its own victim cannot
	// stall urgent work. Preemptions still never exceed urgent tasks
	// taken: a task is reserved before anything is cancelled. Zero means
	// DefaultFleetDeferral (100 ms); DeferForever (-1) never stops
	// deferring; other negative values are invalid.
	FleetDeferral time.Duration

	// Disabled turns preemption off: no task is ever chosen.
	Disabled bool
}

// WithDefaults returns a copy of p with every zero field set to its
// default. It does not allocate; the slices are shared with p.
func (p Policy) WithDefaults() Policy {
	if p.MinRunTime == 0 {
		p.MinRunTime = DefaultMinRunTime
	}
	if p.MaxPreemptions == 0 {
		p.MaxPreemptions = DefaultMaxPreemptions
	}
	if p.MinLevelGap == 0 {
		p.MinLevelGap = DefaultMinLevelGap
	}
	if p.FleetDeferral == 0 {
		p.FleetDeferral = DefaultFleetDeferral
	}
	return p
}

// Validate reports every problem of p after WithDefaults, joined into one
// error. Each problem wraps ErrInvalidPolicy. It returns nil, without
// allocating, for a valid policy.
func (p Policy) Validate() error {
	p = p.WithDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidPolicy}, args...)...))
	}
	if p.MinRunTime < 0 {
		bad("MinRunTime is %v, must not be negative", p.MinRunTime)
	}
	if p.MaxPreemptions < Unlimited {
		bad("MaxPreemptions is %d, must be positive or Unlimited (-1)", p.MaxPreemptions)
	}
	if p.MinLevelGap < 1 {
		bad("MinLevelGap is %d, must be at least 1", p.MinLevelGap)
	}
	if p.FleetDeferral < DeferForever {
		bad("FleetDeferral is %v, must be positive or DeferForever (-1)", p.FleetDeferral)
	}
	for _, l := range p.NeverPreempt {
		if l < 0 {
			bad("NeverPreempt holds level %d, levels must not be negative", l)
		}
	}
	for _, l := range p.NeverPreempted {
		if l < 0 {
			bad("NeverPreempted holds level %d, levels must not be negative", l)
		}
	}
	return errors.Join(errs...)
}
