package checkpoint

import "errors"

// Errors of the typed helpers, matched with errors.Is.
var (
	// ErrNoCheckpointer is returned by Load, Save and NewCursor when ctx
	// carries no checkpoint: the code runs outside the runtime (in tests,
	// see checkpointtest.Saver.Context).
	ErrNoCheckpointer = errors.New("checkpoint: no checkpoint handle in context")

	// ErrMalformedCheckpoint is returned by Load and NewCursor when the saved
	// checkpoint does not decode into the requested type. It will not decode
	// on a retry either; wrap it with handlers.SkipRetry to dead-letter the
	// task, or start over by ignoring it.
	ErrMalformedCheckpoint = errors.New("checkpoint: malformed checkpoint")
)
