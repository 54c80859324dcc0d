package telemetry

import (
	"context"
	"reflect"

	"go.opentelemetry.io/otel"
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
	// Preemptions counts how often the task gave way before this run
	// (overtake.preemptions_before).
	Preemptions int
	// Run is the number of this run of the task, 1 for the first
	// (overtake.run.number); 0 leaves the attribute out, as on enqueue spans.
	Run int
	// Class is the logical priority class (overtake.class).
	Class string
}

// Attributes returns t as the attributes of a process span, messaging
// ones first: the task's, then the run's (attempt, preemptions before this
// run, run number).
func (t TaskInfo) Attributes() []attribute.KeyValue {
	return t.appendAttributes(make([]attribute.KeyValue, 0, maxAttributes))
}

// maxAttributes is the most attributes Attributes returns.
const maxAttributes = 9

// appendAttributes appends Attributes' to kv.
func (t TaskInfo) appendAttributes(kv []attribute.KeyValue) []attribute.KeyValue {
	kv = t.appendTaskAttributes(kv)
	kv = append(kv, AttemptKey.Int(t.Attempt), PreemptionsBeforeKey.Int(t.Preemptions))
	if t.Run > 0 {
		kv = append(kv, RunNumberKey.Int(t.Run))
	}
	return kv
}

// taskAttributes returns what describes the task, not one run of it: the
// attributes of an enqueue span.
func (t TaskInfo) taskAttributes() []attribute.KeyValue {
	return t.appendTaskAttributes(make([]attribute.KeyValue, 0, maxAttributes))
}

// appendTaskAttributes appends taskAttributes' to kv.
func (t TaskInfo) appendTaskAttributes(kv []attribute.KeyValue) []attribute.KeyValue {
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
	if t.Class != "" {
		kv = append(kv, ClassKey.String(t.Class))
	}
	return kv
}

// Silent reports whether every span tp starts records nothing and only
// carries its parent's span context, so that a caller may skip starting
// one (the hot paths of Enqueue and of a run's start): tp is otel's
// no-op provider (trace/noop, set as the global or given as is), or otel's
// global tracer provider with nothing registered behind it yet
// (otel.SetTracerProvider). Cheap enough to ask on every call: a provider
// registered later makes it false at once.
func Silent(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		return true
	}
	return tp != nil && tp == otel.GetTracerProvider() && reflect.TypeOf(tp).String() == "*global.tracerProvider"
}

// Tracer returns the Overtake tracer of tp, named [InstrumentationName]
// and versioned [Version]. A nil tp gives a no-op tracer.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	opts := []trace.TracerOption{trace.WithSchemaURL(SchemaURL)}
	if v := Version(); v != "" {
		opts = append(opts, trace.WithInstrumentationVersion(v))
	}
	return tp.Tracer(InstrumentationName, opts...)
}

// StartEnqueue starts the producer span "enqueue <queue>/<type>" as a child of
// the span in ctx. Inject the returned context into the task's Headers
// before the record is written, and end the span once it is.
func StartEnqueue(ctx context.Context, tr trace.Tracer, t TaskInfo, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	attrs := append([]attribute.KeyValue{systemAttr, opSendAttr, opEnqueueNameAttr}, t.taskAttributes()...)
	opts = append([]trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attrs...),
	}, opts...)
	return tr.Start(ctx, EnqueueSpanName(t.Queue, t.Type), opts...)
}

// StartProcess starts the consumer span "process <queue>/<type>" for one run of
// a task. Its parent is the trace context in headers (the enqueue span),
// extracted with the default propagator; pass nil headers to keep the
// parent in ctx, e.g. after extracting with a propagator of your own.
// Add a link to the victim with [AddPreemptedVictim] or trace.WithLinks.
func StartProcess(ctx context.Context, tr trace.Tracer, t TaskInfo, headers map[string]string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx = Extract(ctx, headers)
	// One slice for the attributes and one for the options: a run's span
	// starts on every task.
	attrs := make([]attribute.KeyValue, 0, 3+maxAttributes)
	attrs = t.appendAttributes(append(attrs, systemAttr, opProcessAttr, opProcessNameAttr))
	all := make([]trace.SpanStartOption, 0, 2+len(opts))
	all = append(all, consumerKind, trace.WithAttributes(attrs...))
	return tr.Start(ctx, ProcessSpanName(t.Queue, t.Type), append(all, opts...)...)
}
