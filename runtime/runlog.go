package runtime

import (
	"sync"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/tracing"
)

// runLog is a run's logger and its handler's (handlers.Logger), each
// built on its first use at a level the runtime's logger keeps: most runs
// log nothing that is kept (their Debug lines are dropped by default),
// and a logger with a task's fields cost a run eight allocations, its
// trace ID a parse of the record's trace context. The fields: the task's
// ID, type and level, its trace ID (its process span's, else its
// enqueue's) and span ID; the handler's add its attempt.
type runLog struct {
	base *zap.Logger // the runtime's; nil: l is set, as built
	o    *observer   // reads the enqueue's trace ID
	t    *store.Task
	span trace.SpanContext // the run's process span, if it is ours

	once    sync.Once
	l       *zap.Logger
	forTask sync.Once
	handler *zap.Logger
}

// init makes z the logger of a run of t, under base, o reading its
// enqueue's trace ID. Without init, z is the logger set in z.l.
func (z *runLog) init(base *zap.Logger, o *observer, t *store.Task) {
	z.base, z.o, z.t = base, o, t
}

// logger returns the run's logger, built on the first call.
func (z *runLog) logger() *zap.Logger {
	z.once.Do(func() {
		if z.base == nil {
			return
		}
		f := telemetry.TaskFields(z.t.ID, z.t.Type, z.t.Level)
		switch {
		case z.span.IsValid():
			f = append(f, zap.String(tracing.FieldTraceID, z.span.TraceID().String()),
				zap.String(tracing.FieldSpanID, z.span.SpanID().String()))
		case z.o != nil:
			if sc := z.o.producer(z.t); sc.IsValid() {
				f = append(f, zap.String(tracing.FieldTraceID, sc.TraceID().String()))
			}
		}
		z.l = z.base.With(f...)
	})
	return z.l
}

// Logger returns the handler's logger: the run's, with the attempt
// (tasklog.Source, which handlers.Logger reads).
func (z *runLog) Logger() *zap.Logger {
	z.forTask.Do(func() { z.handler = z.logger().With(zap.Int(telemetry.FieldAttempt, z.t.Attempt)) })
	return z.handler
}

// enabled reports whether a line at lvl would be kept.
func (z *runLog) enabled(lvl zapcore.Level) bool {
	if z.base == nil {
		return z.l.Core().Enabled(lvl)
	}
	return z.base.Core().Enabled(lvl)
}

// Log logs msg at lvl, building the logger if the line is kept.
func (z *runLog) Log(lvl zapcore.Level, msg string, fields ...zap.Field) {
	if z.enabled(lvl) {
		z.logger().Log(lvl, msg, fields...)
	}
}

// Debug logs msg at debug level (see Log).
func (z *runLog) Debug(msg string, fields ...zap.Field) { z.Log(zapcore.DebugLevel, msg, fields...) }

// Info logs msg at info level (see Log).
func (z *runLog) Info(msg string, fields ...zap.Field) { z.Log(zapcore.InfoLevel, msg, fields...) }

// Warn logs msg at warn level (see Log).
func (z *runLog) Warn(msg string, fields ...zap.Field) { z.Log(zapcore.WarnLevel, msg, fields...) }

// Error logs msg at error level (see Log).
func (z *runLog) Error(msg string, fields ...zap.Field) { z.Log(zapcore.ErrorLevel, msg, fields...) }
