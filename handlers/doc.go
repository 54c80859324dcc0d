// Package handlers is how application code plugs into Overtake: a Handler
// processes one task, a Mux routes tasks to handlers by type, middleware wraps
// them, and the errors a handler returns steer what happens to its task next.
//
// The main flow:
//
//	mux := handlers.NewMux()
//	mux.Use(handlers.Recover())
//	handlers.HandleJSON(mux, "email", func(ctx context.Context, t *queue.TaskInfo, args EmailArgs) error {
//		if err := send(ctx, args); err != nil {
//			return handlers.RetryAfter(time.Minute, err) // upstream asked us to back off
//		}
//		return nil
//	})
//
// # Steering a task
//
// A handler returns nil when its task is done. Any other error is a failed
// attempt, retried with backoff until the task's retry budget is spent. A
// handler changes that by wrapping its error:
//
//   - [SkipRetry] dead-letters the task now (bad input will not get better).
//   - [RetryAfter] retries after a delay the handler chooses.
//   - [Yield] stops voluntarily: the task is requeued at the head of its
//     level with its checkpoint and the attempt is not counted.
//
// Every wrapper works with errors.Is and errors.As through any further
// wrapping, so fmt.Errorf("...: %w", handlers.SkipRetry(err)) still steers.
//
// # Preemption and shutdown
//
// When more urgent work needs the slot, the runtime cancels the handler's
// context with the cause [ErrPreempted]; when the worker shuts down, with
// [ErrShutdown]. A handler that wants to resume later saves its checkpoint
// (see package checkpoint) and returns promptly:
//
//	case <-ctx.Done():
//		if err := checkpoint.Save(ctx, cursor); err != nil {
//			return err
//		}
//		return context.Cause(ctx) // ErrPreempted or ErrShutdown
//
// Any error returned after such a cancellation requeues the task, so a
// handler that simply returns ctx.Err() is requeued too.
//
// # Panics
//
// A panicking handler must never crash the worker. The [Recover]
// middleware (which the runtime always puts around the handler it is
// given) turns a panic into a *[PanicError] carrying the value and the
// stack; it is retried like any failure.
package handlers
