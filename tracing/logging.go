package tracing

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// Log field keys, the same on every line Overtake writes.
const (
	// FieldTraceID is the key of the trace ID, 32 hex digits.
	FieldTraceID = "trace_id"
	// FieldSpanID is the key of the span ID, 16 hex digits.
	FieldSpanID = "span_id"
	// FieldTaskID is the key of the task ID.
	FieldTaskID = "task_id"
	// FieldTaskType is the key of the task type.
	FieldTaskType = "task_type"
	// FieldLevel is the key of the priority level; not "level", which
	// zap's encoders use for the log level.
	FieldLevel = "task_level"
)

// LogFields returns trace_id and span_id of the span in ctx, or nil when
// ctx carries no valid span context.
func LogFields(ctx context.Context) []zap.Field {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	return []zap.Field{
		zap.String(FieldTraceID, sc.TraceID().String()),
		zap.String(FieldSpanID, sc.SpanID().String()),
	}
}

// TaskFields returns task_id, task_type and task_level.
func TaskFields(id, typ string, level int) []zap.Field {
	return []zap.Field{
		zap.String(FieldTaskID, id),
		zap.String(FieldTaskType, typ),
		zap.Int(FieldLevel, level),
	}
}

// LoggerOrNop returns l, or zap.NewNop() when l is nil: the runtime takes
// an injectable *zap.Logger and stays silent without one.
func LoggerOrNop(l *zap.Logger) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return l
}

// Logger returns l (or a no-op logger when nil) with the trace
// fields of ctx attached; l itself when ctx has no span.
func Logger(ctx context.Context, l *zap.Logger) *zap.Logger {
	l = LoggerOrNop(l)
	if f := LogFields(ctx); f != nil {
		return l.With(f...)
	}
	return l
}
