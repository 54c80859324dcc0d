// Package checkpoint is how a handler saves its progress and resumes from
// it: Load the task's newest checkpoint, Save new state under the run's
// lease, or keep a Cursor that saves at most once per interval. A
// preempted, shut down or crashed task resumes from its newest checkpoint.
//
// The main flow, inside a handler (the runtime puts the run's checkpoint
// in ctx; in tests, checkpointtest.Saver.Context does):
//
//	type rowProgress struct{ Row int }
//
//	func export(ctx context.Context, t *queue.TaskInfo) error {
//		p, _, err := checkpoint.Load[rowProgress](ctx) // zero value on the first run
//		if err != nil {
//			return err
//		}
//		for ; p.Row < rows; p.Row++ {
//			select {
//			case <-ctx.Done(): // preempted or shutting down
//				if err := checkpoint.Save(ctx, p); err != nil {
//					return err
//				}
//				return context.Cause(ctx) // handlers.ErrPreempted or ErrShutdown
//			default:
//			}
//			exportRow(p.Row)
//		}
//		return nil
//	}
//
// # Saving after cancellation
//
// A preempted handler saves its checkpoint after its context was cancelled,
// so Save deliberately ignores the cancellation of the context it is given:
// it runs under context.WithoutCancel(ctx), keeping the context's values
// (trace spans), bounded by a save timeout (the runtime's GracePeriod). The runtime's grace period still bounds the handler as a whole.
//
// # Fencing
//
// Every Save presents the lease token of the run. Once the lease is lost (the
// task was recovered and leased elsewhere) Save fails with an error matching
// queue.ErrLeaseLost and changes nothing; the handler should stop, since the
// task belongs to another worker now.
//
// # Typed state
//
// Load and Save encode a value as JSON; Cursor adds throttled saving for
// loops that advance a position often. A checkpoint larger than the
// queue's MaxCheckpointBytes is refused with queue.ErrCheckpointTooLarge.
package checkpoint
