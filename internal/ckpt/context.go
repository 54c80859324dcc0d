package ckpt

import "context"

// ContextKey is the key NewContext stores a Handle under, and the one
// FromContext looks up. A context may answer it itself, without a value
// of its own: the runtime's run context does, for the Handle and the
// logger it keeps in the run (one context for both).
type ContextKey struct{}

// NewContext returns a copy of ctx that carries h. The runtime calls it
// before it runs a handler.
func NewContext(ctx context.Context, h *Handle) context.Context {
	return context.WithValue(ctx, ContextKey{}, h)
}

// FromContext returns the Handle ctx carries, if any.
func FromContext(ctx context.Context) (*Handle, bool) {
	h, ok := ctx.Value(ContextKey{}).(*Handle)
	return h, ok && h != nil
}
