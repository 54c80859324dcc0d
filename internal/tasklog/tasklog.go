// Package tasklog carries a run's logger in the context of its handler,
// from the runtime, which puts it there, to handlers.Logger, which hands
// it to the handler (package handlers cannot import the runtime).
package tasklog

import (
	"context"

	"go.uber.org/zap"
)

// ContextKey is the key NewContext stores a Source under, and the one
// FromContext looks up. A context may answer it itself, without a value
// of its own: the runtime's run context does, for the logger and the
// checkpoint Handle it keeps in the run (one context for both).
type ContextKey struct{}

// Source gives a handler its logger: the runtime's run builds it on the
// first call only, as most handlers log nothing.
type Source interface {
	Logger() *zap.Logger
}

// NewContext returns a copy of ctx that carries src. The runtime calls it
// before it runs a handler.
func NewContext(ctx context.Context, src Source) context.Context {
	return context.WithValue(ctx, ContextKey{}, src)
}

// Logger is a Source of a logger built already.
type Logger struct{ L *zap.Logger }

// Logger returns l.L.
func (l Logger) Logger() *zap.Logger { return l.L }

// FromContext returns the logger ctx carries, if any.
func FromContext(ctx context.Context) (*zap.Logger, bool) {
	src, ok := ctx.Value(ContextKey{}).(Source)
	if !ok || src == nil {
		return nil, false
	}
	l := src.Logger()
	return l, l != nil
}
