// Package preempt is Overtake's preemption policy: given the tasks running
// in a saturated worker process and the level of an arriving task, it
// decides which running task, if any, gives way.
//
// It is pure policy. It speaks to no Redis, starts no goroutines, keeps no
// global state and does not allocate on the hot path; the runtime owns
// reservation, cancellation and requeueing.
//
// The main flow, as the runtime uses it (see "Preemption protocol" in
// DESIGN.md):
//
//	pol := preempt.Policy{MinRunTime: 2 * time.Second}.WithDefaults()
//	if err := pol.Validate(); err != nil {
//		return err // errors.Is(err, preempt.ErrInvalidPolicy)
//	}
//
//	// Saturated: which task would give way to urgent enough work?
//	victim, ok := pol.Victim(running, time.Now())
//	if !ok {
//		return // nothing is preemptible: wait for a free slot
//	}
//	// Reserve only a task urgent enough to preempt it.
//	task, _, err := q.Reserve(ctx, queue.ReserveRequest{
//		VictimID: victim.ID, VictimLevel: victim.Level,
//		MinLevel: pol.MinPreemptingLevel(victim.Level), // ...
//	})
//
//	// Got one: confirm the victim and cancel it with ErrPreempted.
//	if v, ok := pol.Choose(running, task.Level, time.Now()); ok {
//		cancel[v.ID](ErrPreempted)
//	}
//
// # Rules
//
// A running task is a victim for an arrival only if all of these hold:
//
//   - the policy is not Disabled and the arriving level is not in
//     NeverPreempt;
//   - the arriving level exceeds the task's level by at least MinLevelGap
//     (an equal level never preempts);
//   - the task is Preemptible, was preempted fewer than MaxPreemptions
//     times, has run at least MinRunTime, and its level is not in
//     NeverPreempted.
//
// Among the victims, Choose takes the lowest level, then the one that
// loses the least work (Candidate.WorkLost: time since its last
// checkpoint in this run, or since its start), then the smallest ID.
package preempt
