package checkpoint

import (
	"context"
	"errors"
)

// Errors of the typed helpers, matched with errors.Is.
var (
	// ErrNoCheckpointer is returned by Load, Save and NewCursor when ctx
	// carries no Handle: the code runs outside the runtime, or the runtime
	// was not given a Saver.
	ErrNoCheckpointer = errors.New("checkpoint: no checkpoint handle in context")

	// ErrMalformedCheckpoint is returned by Load and NewCursor when the saved
	// checkpoint does not decode into the requested type. It will not decode
	// on a retry either; wrap it with handlers.SkipRetry to dead-letter the
	// task, or start over by ignoring it.
	ErrMalformedCheckpoint = errors.New("checkpoint: malformed checkpoint")
)

type contextKey struct{}

// NewContext returns a copy of ctx that carries h. The runtime calls it
// before it runs a handler.
func NewContext(ctx context.Context, h *Handle) context.Context {
	return context.WithValue(ctx, contextKey{}, h)
}

// FromContext returns the Handle ctx carries, if any.
func FromContext(ctx context.Context) (*Handle, bool) {
	h, ok := ctx.Value(contextKey{}).(*Handle)
	return h, ok && h != nil
}
