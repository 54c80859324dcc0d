package handlers

import (
	"context"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/tasklog"
)

// Logger returns the logger of the task that ctx, a handler's context, is
// running: the runtime's (runtime.Config.Logger) with the fields of every
// line the runtime writes about the task, queue, worker, task_id,
// task_type and task_level, and task_attempt (TaskInfo.Attempt); with
// trace_id and span_id when the task's run has a span (a tracer provider
// is installed, see package tracing). Outside a handler run by the
// runtime it returns a no-op logger, so a handler tested on its own logs
// nothing.
//
//	handlers.Logger(ctx).Info("invoice sent", zap.String("to", args.To))
func Logger(ctx context.Context) *zap.Logger {
	if l, ok := tasklog.FromContext(ctx); ok {
		return l
	}
	return zap.NewNop()
}
