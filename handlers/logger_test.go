package handlers_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/tasklog"
)

// Outside a handler run by the runtime, Logger is a no-op logger; in one,
// it is the logger the runtime put in the handler's context.
func TestLogger(t *testing.T) {
	require.False(t, handlers.Logger(context.Background()).Core().Enabled(zapcore.ErrorLevel))

	core, logs := observer.New(zapcore.InfoLevel)
	ctx := tasklog.NewContext(context.Background(), tasklog.Logger{L: zap.New(core).With(zap.String("task_id", "t1"))})
	handlers.Logger(ctx).Info("hello")
	require.Equal(t, 1, logs.FilterMessage("hello").FilterField(zap.String("task_id", "t1")).Len())
}
