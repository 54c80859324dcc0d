// Package victim picks the running task that gives way to more urgent
// work, by a preempt.Policy: the runtime's side of the policy, kept out of
// the public API (users configure a preempt.Policy; the runtime asks
// Policy here which task it preempts).
package victim

import (
	"slices"
	"time"

	"github.com/overtake/overtake/preempt"
)

// Policy is a preempt.Policy with the runtime's questions: which tasks are
// eligible, which arrival preempts which level, and which task gives way.
type Policy struct{ preempt.Policy }

// prepared returns p with its defaults, and whether it validates.
func (p Policy) prepared() (Policy, bool) {
	p.Policy = p.WithDefaults()
	return p, p.Validate() == nil
}

// Candidate is a running task, as the runtime sees it when it looks for a
// victim.
type Candidate struct {
	// ID identifies the task; it breaks ties, so Choose is deterministic.
	ID string
	// Level is the task's priority level; higher is more urgent.
	Level int
	// StartedAt is when the current run (lease) of the task began.
	StartedAt time.Time
	// Preemptions counts how often the task was preempted before.
	Preemptions int
	// Preemptible is false for a task that opted out of preemption.
	Preemptible bool
	// LastCheckpoint is when the task last saved a checkpoint, zero if it
	// never did. A checkpoint older than StartedAt (saved by an earlier
	// run) protects no work of the current run.
	LastCheckpoint time.Time
}

// RunTime is how long c has run at now: now-StartedAt, or zero if
// StartedAt is after now (clock skew between hosts).
func (c Candidate) RunTime(now time.Time) time.Duration {
	return max(now.Sub(c.StartedAt), 0)
}

// WorkLost is the work that preempting c at now throws away: the time
// since the later of its last checkpoint and its start, because everything
// before that is either saved or belongs to an earlier run. A task that
// never checkpointed loses its whole run time. It is never negative.
func (c Candidate) WorkLost(now time.Time) time.Duration {
	since := c.StartedAt
	if c.LastCheckpoint.After(since) {
		since = c.LastCheckpoint
	}
	return max(now.Sub(since), 0)
}

// Eligible reports whether c may be preempted at now by some arrival,
// whatever its level: preemption is enabled, the task is Preemptible, has
// been preempted fewer than MaxPreemptions times, has run at least
// MinRunTime, and its level is not in NeverPreempted. It is false for
// every task if p does not validate.
func (p Policy) Eligible(c Candidate, now time.Time) bool {
	p, ok := p.prepared()
	return ok && p.eligible(&c, now)
}

// eligible is Eligible for a policy with defaults that validates.
func (p *Policy) eligible(c *Candidate, now time.Time) bool {
	switch {
	case p.Disabled, !c.Preemptible:
		return false
	case p.MaxPreemptions != preempt.Unlimited && c.Preemptions >= p.MaxPreemptions:
		return false
	case c.RunTime(now) < p.MinRunTime:
		return false
	}
	return !slices.Contains(p.NeverPreempted, c.Level)
}

// Preempts reports whether a task arriving at level arriving may displace
// an eligible task running at level victim: preemption is enabled,
// arriving is not in NeverPreempt, and arriving exceeds victim by at
// least MinLevelGap. It is false if p does not validate.
func (p Policy) Preempts(arriving, victim int) bool {
	p, ok := p.prepared()
	return ok && p.arrivalMayPreempt(arriving) && p.gapOK(arriving, victim)
}

func (p *Policy) arrivalMayPreempt(arriving int) bool {
	return !p.Disabled && !slices.Contains(p.NeverPreempt, arriving)
}

// gapOK reports arriving-victim >= MinLevelGap without overflowing.
func (p *Policy) gapOK(arriving, victim int) bool {
	if victim >= arriving {
		return false
	}
	return uint(arriving)-uint(victim) >= uint(p.MinLevelGap)
}

// Choose picks the running task that gives way to a task arriving at
// level arriving, or ok=false if none may. A victim is Eligible and
// Preempts(arriving, victim.Level) holds. Among those it picks:
//
//  1. the lowest level;
//  2. then the fewest Preemptions, so that preemptions spread: a task is
//     not displaced again while another victim of its level was displaced
//     fewer times;
//  3. then the least WorkLost (the most recent checkpoint, or if none the
//     most recent start);
//  4. then the smallest ID, so the choice does not depend on the order of
//     running.
//
// Rule 2 comes before rule 3 because a task that just resumed loses
// little (its run is young) and would otherwise be the victim of every
// arrival until MaxPreemptions makes it immune. It costs a little more
// work lost per preemption: at most the checkpoint interval of a task not
// yet preempted.
//
// Choose does not allocate and does not modify running.
func (p Policy) Choose(running []Candidate, arriving int, now time.Time) (victim Candidate, ok bool) {
	p, ok = p.prepared()
	if !ok || !p.arrivalMayPreempt(arriving) {
		return Candidate{}, false
	}
	return p.pick(running, now, arriving, true)
}

// Victim returns the task that would give way to any arrival urgent
// enough: the best Eligible task of running by the order of Choose, or
// ok=false if none is eligible. The runtime names it when it reserves an
// urgent task, before the arrival's level is known;
// for any arriving level that Preempts(arriving, victim.Level), Choose
// with the same now returns this victim.
func (p Policy) Victim(running []Candidate, now time.Time) (victim Candidate, ok bool) {
	p, ok = p.prepared()
	if !ok {
		return Candidate{}, false
	}
	return p.pick(running, now, 0, false)
}

// MinPreemptingLevel is the lowest arriving level that can preempt a task
// at level victim: victim+MinLevelGap. Levels in NeverPreempt at or above
// it still never preempt.
func (p Policy) MinPreemptingLevel(victim int) int {
	return victim + p.Policy.WithDefaults().MinLevelGap
}

// pick returns the best eligible candidate; with byLevel, only those that
// an arrival at level arriving may displace.
func (p *Policy) pick(running []Candidate, now time.Time, arriving int, byLevel bool) (Candidate, bool) {
	var best *Candidate
	var bestLost time.Duration
	for i := range running {
		c := &running[i]
		if best != nil && c.Level > best.Level {
			continue // cannot be better; skip the rest of the checks
		}
		if (byLevel && !p.gapOK(arriving, c.Level)) || !p.eligible(c, now) {
			continue
		}
		lost := c.WorkLost(now)
		if best == nil || better(c, lost, best, bestLost) {
			best, bestLost = c, lost
		}
	}
	if best == nil {
		return Candidate{}, false
	}
	return *best, true
}

// better reports whether a (losing lostA) is a better victim than b, by
// the order of Choose: level, Preemptions, work lost, ID.
func better(a *Candidate, lostA time.Duration, b *Candidate, lostB time.Duration) bool {
	if a.Level != b.Level {
		return a.Level < b.Level
	}
	if a.Preemptions != b.Preemptions {
		return a.Preemptions < b.Preemptions
	}
	if lostA != lostB {
		return lostA < lostB
	}
	return a.ID < b.ID
}

// LowestEligibleLevel returns the lowest level among the Eligible tasks of
// running, or ok=false if none is eligible. A saturated runtime reserves
// an arriving task only if its level would preempt at this level (see
// Preempts); with the default gap, that is any level above it.
func (p Policy) LowestEligibleLevel(running []Candidate, now time.Time) (level int, ok bool) {
	p, valid := p.prepared()
	if !valid {
		return 0, false
	}
	for i := range running {
		c := &running[i]
		if (!ok || c.Level < level) && p.eligible(c, now) {
			level, ok = c.Level, true
		}
	}
	return level, ok
}
