// Package preempt is Overtake's preemption policy: given the tasks running
// in a saturated worker process and the level of an arriving task, it
// decides which running task, if any, gives way.
//
// It is pure configuration: a plain value set as runtime.Config.Preemption
// (runtime.Config{Preemption: policy}). The runtime applies it when a
// worker is saturated and more urgent work arrives (see "Preemption
// protocol" in docs/design.md):
//
//	policy := preempt.Policy{
//		MinRunTime:     2 * time.Second, // let short tasks finish
//		NeverPreempted: []int{0},        // level 0 always runs to completion
//	}
//
// runtime.New validates it; a policy that does not validate is an error
// matching ErrInvalidPolicy.
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
// Among the victims, the runtime takes the lowest level, then the one
// preempted the fewest times, then the one that loses the least work (the
// time since its last checkpoint in this run, or since its start), then
// the smallest ID. The fewest preemptions come before the least work
// because a task that just resumed loses the least (its run is young): it
// would be the victim of every arrival until MaxPreemptions made it
// immune. Spreading preemptions costs some work per preemption (at most
// the checkpoint interval of a task preempted fewer times); in exchange
// no task gives way again while another task of its level gave way fewer
// times: on its worker, and across the fleet for up to FleetDeferral (a
// worker whose victim was preempted more defers to the worker that runs
// the less preempted task).
package preempt
