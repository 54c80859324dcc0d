package ckpt

import "context"

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
