package handlers

import (
	"context"

	"github.com/overtake/overtake/internal/ckpt"
)

// ErrNoRunningTask is returned by SetResult when ctx is not the context
// the runtime gave a handler (in tests, checkpointtest.Saver.Context makes
// one).
var ErrNoRunningTask = ckpt.ErrNoRunningTask

// SetResult stores data as the result of the task running in ctx, for
// callers to read back with queue.Client.Inspect (TaskInfo.Result),
// overtake inspect and the console:
//
//	if err := handlers.SetResult(ctx, []byte(`{"rows":1200}`)); err != nil {
//		return err
//	}
//	return nil
//
// It is one Redis round trip, fenced by the run's lease like
// checkpoint.Save: once the lease is lost (the task was recovered and runs
// elsewhere) it fails with an error matching queue.ErrLeaseLost and stores
// nothing. A later call replaces the result, also from a later attempt
// after a retry, so the latest write wins; a run that writes nothing
// leaves the earlier result in place.
//
// The result has its own key and expiry: it is kept for the worker's
// queue.Config.ResultRetention (24 h by default) from this call, whether
// the task then completes (its record is deleted at the ack; Inspect
// returns it as done with the result), fails or is dead-lettered.
// Deleting a dead letter deletes its result.
//
// A result larger than queue.Config.MaxResultBytes (1 MiB by default)
// fails with an error matching queue.ErrResultTooLarge and changes
// nothing: the earlier result, the checkpoint and the task stay as they
// were. Returning that error fails the attempt like any other; wrap it
// with SkipRetry if it will not fit on a retry either.
//
// Like checkpoint.Save, SetResult works after ctx was cancelled (a
// preempted handler may still store what it has), bounded by the
// runtime's GracePeriod. It fails with ErrNoRunningTask outside a handler.
func SetResult(ctx context.Context, data []byte) error {
	h, ok := ckpt.FromContext(ctx)
	if !ok {
		return ErrNoRunningTask
	}
	return h.SaveResult(ctx, data)
}
