package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TaskInfo is what the span helpers record about a task. The runtime fills
// it from its task record; this package imports none of ours. Empty
// strings are left out of the attributes.
type TaskInfo struct {
	// Queue is the queue name (messaging.destination.name).
	Queue string
	// ID is the task ID (messaging.message.id).
	ID string
	// Type is the task type (overtake.task.type).
	Type string
	// Level is the priority level (overtake.level).
	Level int
	// LevelName is the level's name (overtake.level.name).
	LevelName string
	// Attempt counts failed attempts so far (overtake.attempt).
	Attempt int
	// Preemptions counts how often the task gave way (overtake.preemptions).
	Preemptions int
	// Class is the logical priority class (overtake.class).
	Class string
}

// Attributes returns t as span attributes, messaging ones first.
func (t TaskInfo) Attributes() []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 8)
	kv = append(kv, DestinationKey.String(t.Queue))
	if t.ID != "" {
		kv = append(kv, MessageIDKey.String(t.ID))
	}
	if t.Type != "" {
		kv = append(kv, TaskTypeKey.String(t.Type))
	}
	kv = append(kv, LevelKey.Int(t.Level))
	if t.LevelName != "" {
		kv = append(kv, LevelNameKey.String(t.LevelName))
	}
	kv = append(kv, AttemptKey.Int(t.Attempt), PreemptionsKey.Int(t.Preemptions))
	if t.Class != "" {
		kv = append(kv, ClassKey.String(t.Class))
	}
	return kv
}

// Tracer returns the Overtake tracer of tp, named [InstrumentationName].
// A nil tp gives a no-op tracer.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(InstrumentationName, trace.WithSchemaURL(SchemaURL))
}

// StartEnqueue starts the producer span "enqueue <queue>" as a child of
// the span in ctx. Inject the returned context into the task's Headers
// before the record is written, and end the span once it is.
func StartEnqueue(ctx context.Context, tr trace.Tracer, t TaskInfo, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	attrs := append([]attribute.KeyValue{systemAttr, opSendAttr, opEnqueueNameAttr}, t.Attributes()...)
	opts = append([]trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attrs...),
	}, opts...)
	return tr.Start(ctx, EnqueueSpanName(t.Queue), opts...)
}

// StartProcess starts the consumer span "process <queue>" for one run of
// a task. Its parent is the trace context in headers (the enqueue span),
// extracted with the default propagator; pass nil headers to keep the
// parent in ctx, e.g. after extracting with a propagator of your own.
// Add a link to the victim with [AddPreemptedVictim] or trace.WithLinks.
func StartProcess(ctx context.Context, tr trace.Tracer, t TaskInfo, headers map[string]string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx = Extract(ctx, headers)
	attrs := append([]attribute.KeyValue{systemAttr, opProcessAttr, opProcessNameAttr}, t.Attributes()...)
	opts = append([]trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attrs...),
	}, opts...)
	return tr.Start(ctx, ProcessSpanName(t.Queue), opts...)
}
