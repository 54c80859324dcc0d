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

// Logger returns l with the trace fields of ctx attached (l itself when
// ctx has no span; a no-op logger when l is nil). In a handler, the
// lines it writes lead to the task's trace in Jaeger:
//
//	tracing.Logger(ctx, log).Info("invoice sent")
func Logger(ctx context.Context, l *zap.Logger) *zap.Logger {
	if l == nil {
		l = zap.NewNop()
	}
	if f := LogFields(ctx); f != nil {
		return l.With(f...)
	}
	return l
}
