// Package tasklog carries a run's logger in the context of its handler,
// from the runtime, which puts it there, to handlers.Logger, which hands
// it to the handler (package handlers cannot import the runtime).
package tasklog

import (
	"context"

	"go.uber.org/zap"
)

type contextKey struct{}

// NewContext returns a copy of ctx that carries l. The runtime calls it
// before it runs a handler.
func NewContext(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, contextKey{}, l)
}

// FromContext returns the logger ctx carries, if any.
func FromContext(ctx context.Context) (*zap.Logger, bool) {
	l, ok := ctx.Value(contextKey{}).(*zap.Logger)
	return l, ok && l != nil
}
