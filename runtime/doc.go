// Package runtime is the Overtake engine a worker binary embeds: one ants
// pool of Concurrency workers per process pulls tasks from a queue's Redis
// priority lists, highest level first, and preempts running lower-priority
// tasks when urgent work arrives and no worker in the fleet is free.
//
// The main flow, as Example runs it on miniredis (doc_test.go checks that
// every line below is a line of Example):
//
//	q, err := queue.New(rdb, queue.Config{Name: "default"})
//	mux := handlers.NewMux()
//	mux.HandleFunc("import", func(ctx context.Context, t *queue.TaskInfo) error {
//		state, _, err := checkpoint.Load[progress](ctx) // zero on the first run
//		for state.Row < 3 {
//			if ctx.Err() != nil { // preempted or shutting down
//				_ = checkpoint.Save(ctx, state) // still allowed after cancel
//				return context.Cause(ctx)
//			}
//			state.Row++ // ... work ...
//		}
//		return nil
//	})
//	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 8, Logger: zap.NewNop()})
//	go func() { stopped <- rt.Run(ctx) }() // blocks; on ctx end, requeues every running task
//
// Example_result stores and reads a task's result, ExamplePeriodic
// enqueues on a schedule and Example_handlerLogger logs from a handler.
//
// # Leasing
//
// A dispatcher goroutine leases as many tasks as there are free slots in one
// Redis round trip. Idle, it waits for a Pub/Sub message that the enqueue
// script publishes, with a slow fallback poll (PollInterval); it never polls
// Redis in a loop. A heartbeat extends every lease of the worker in one call.
//
// # Services
//
// Inside, a Runtime is a few services, each a type with one start and one
// stop: the heartbeater (heartbeat.go) extends every lease, the completer
// (settle.go, ack.go) writes each run's outcome and retries it while Redis
// is away, the wake listener (wake.go) keeps the subscription, the
// preemptor (victim.go, deference.go) chooses victims and reserves urgent
// work, the scheduler (periodic.go) enqueues periodic ticks and the
// autoscaler (pool_autoscale.go) sizes the pools, around the dispatcher
// (dispatch.go, lease.go) and the slots it fills. docs/design.md, "The
// worker's services", draws them.
//
// # Preemption
//
// When every slot is busy and a task above the lowest preemptible running
// level is announced, the runtime first RESERVES it (leases it with a
// minimum level, in a script that refuses while any live worker of the fleet
// has a free slot or runs a lower eligible victim), and only then cancels its
// victim with context.WithCancelCause and a cause matching handlers.ErrPreempted. So
// preemptions never exceed urgent tasks taken. The victim has GracePeriod to
// save its checkpoint and return; it is then requeued at the head of its
// level, counting a preemption but not an attempt. A handler that ignores
// cancellation keeps its slot and its lease (Go cannot stop a goroutine): it
// is counted in Stats().Stuck, logged, and never runs twice at once.
// Config.UrgentStart chooses whether the urgent task starts at once (the
// pool briefly over capacity) or after its victim returned. The policy knobs
// (minimum run time, maximum preemptions per task, levels that never preempt
// or are never preempted) are in package preempt.
//
// # Autoscaling
//
// With Config.Autoscale set, the concurrency follows the queue's backlog
// within [Min, Max]: every Interval one pipelined round trip reads the
// pending count per level, and the runtime sets
// clamp(used + ceil(pending/TargetBacklogPerWorker), Min, Max) slots, up at
// once and down by at most ScaleDownStep per Interval. Scaling down never
// cancels a task; it only stops leasing. Every change is logged, counted
// in Stats, shown by Concurrency and reported to the fleet by a heartbeat
// at once, so fleet-wide free-slot checks stay right.
//
// # Shutdown
//
// Shutdown stops leasing, tells the fleet it has no capacity and preempts
// every running task with the cause handlers.ErrShutdown: each checkpoints and is
// requeued, so a rolling deploy loses no progress. A crashed worker's leases
// expire and its tasks resume elsewhere from their last checkpoint.
package runtime
