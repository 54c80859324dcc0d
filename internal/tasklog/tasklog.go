// Package tasklog carries a run's logger in the context of its handler,
// from the runtime, which puts it there, to handlers.Logger, which hands
// it to the handler (package handlers cannot import the runtime).
package tasklog

import (
	"context"

	"go.uber.org/zap"
)

type contextKey struct{}

// Source gives a handler its logger: the runtime's run builds it on the
// first call only, as most handlers log nothing.
type Source interface {
	Logger() *zap.Logger
}

// NewContext returns a copy of ctx that carries src. The runtime calls it
// before it runs a handler.
func NewContext(ctx context.Context, src Source) context.Context {
	return context.WithValue(ctx, contextKey{}, src)
}

// Logger is a Source of a logger built already.
type Logger struct{ L *zap.Logger }

// Logger returns l.L.
func (l Logger) Logger() *zap.Logger { return l.L }

// FromContext returns the logger ctx carries, if any.
func FromContext(ctx context.Context) (*zap.Logger, bool) {
	src, ok := ctx.Value(contextKey{}).(Source)
	if !ok || src == nil {
		return nil, false
	}
	l := src.Logger()
	return l, l != nil
}
