// Package telemetry is how Overtake traces and measures itself: the names
// of spans, events, attributes and metrics (documented for users in package
// tracing), span helpers, trace-context propagation in task headers and the
// metric instruments. It depends on the OpenTelemetry API only.
package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName names the tracer and the meter of Overtake.
const InstrumentationName = "github.com/overtake/overtake"

// SchemaURL is the OpenTelemetry schema the attribute names follow
// (semantic conventions v1.43.0, the newest shipped with otel v1.47).
const SchemaURL = semconv.SchemaURL

// System is the value of messaging.system on every span.
const System = "overtake"

// Messaging operation names (messaging.operation.name). Span names are
// "<operation> <queue>/<task type>": the messaging conventions'
// "<operation> <destination>", the destination narrowed to the task type,
// so that Jaeger's span list, timeline and Operation filter tell a report
// from an alert. Task types are a bounded set (the handlers' names), so the
// names stay low-cardinality; task IDs never appear in them.
const (
	// OperationEnqueue names the producer operation: a task is sent.
	OperationEnqueue = "enqueue"
	// OperationProcess names the consumer operation: a handler runs a task.
	OperationProcess = "process"
)

// EnqueueSpanName returns the name of the producer span of a task of type
// typ on queue: "enqueue <queue>/<typ>", or "enqueue <queue>" when typ is
// empty.
func EnqueueSpanName(queue, typ string) string { return spanName(OperationEnqueue, queue, typ) }

// ProcessSpanName returns the name of the consumer span of a run of a task
// of type typ on queue: "process <queue>/<typ>", or "process <queue>" when
// typ is empty.
func ProcessSpanName(queue, typ string) string { return spanName(OperationProcess, queue, typ) }

func spanName(op, queue, typ string) string {
	if typ == "" {
		return op + " " + queue
	}
	return op + " " + queue + "/" + typ
}

// Span event names. Events go on the process span of the task they concern.
const (
	// EventPreempted marks that this task was told to give way (victim side).
	EventPreempted = "preempted"
	// EventPreemptedVictim marks that this task displaced another (preemptor side);
	// the span also links to the victim's span.
	EventPreemptedVictim = "preempted.victim"
	// EventCheckpointSaved marks that the handler saved a checkpoint.
	EventCheckpointSaved = "checkpoint.saved"
	// EventResultStored marks that the handler stored the task's result
	// (handlers.SetResult).
	EventResultStored = "result.stored"
	// EventResumed marks that the handler started from a saved checkpoint.
	EventResumed = "resumed"
	// EventRequeued marks that the task went back to the head of its level.
	EventRequeued = "requeued"
	// EventRetry marks that the attempt failed and the task waits for a retry.
	EventRetry = "retry"
	// EventDead marks that the task was dead-lettered.
	EventDead = "dead"
	// EventCanceled marks that the task ended canceled
	// (queue.Client.Cancel).
	EventCanceled = "canceled"
	// EventSLABreached marks that the task waited longer than its level's
	// SLA before this run was leased.
	EventSLABreached = "sla.breached"
)

// Attribute keys of the OpenTelemetry messaging conventions, taken from
// go.opentelemetry.io/otel/semconv/v1.43.0 so they track the spec.
const (
	// MessagingSystemKey is messaging.system; always [System].
	MessagingSystemKey = semconv.MessagingSystemKey
	// DestinationKey is messaging.destination.name: the queue name.
	DestinationKey = semconv.MessagingDestinationNameKey
	// MessageIDKey is messaging.message.id: the task ID.
	MessageIDKey = semconv.MessagingMessageIDKey
	// OperationTypeKey is messaging.operation.type: "send" or "process".
	OperationTypeKey = semconv.MessagingOperationTypeKey
	// OperationNameKey is messaging.operation.name: "enqueue" or "process".
	OperationNameKey = semconv.MessagingOperationNameKey
)

// Attribute keys of our own, in the overtake.* namespace.
const (
	// TaskTypeKey is overtake.task.type: the handler's task type.
	TaskTypeKey = attribute.Key("overtake.task.type")
	// LevelKey is overtake.level: the priority level, higher is more urgent.
	LevelKey = attribute.Key("overtake.level")
	// LevelNameKey is overtake.level.name: the level's configured name.
	LevelNameKey = attribute.Key("overtake.level.name")
	// AttemptKey is overtake.attempt: failed attempts so far.
	AttemptKey = attribute.Key("overtake.attempt")
	// RunNumberKey is overtake.run.number on a process span: which run of
	// the task this is, 1 for the first.
	RunNumberKey = attribute.Key("overtake.run.number")
	// PreemptionsBeforeKey is overtake.preemptions_before: how often the
	// task gave way before this run (this run's own preemption, if any, is
	// [RunPreemptedKey]).
	PreemptionsBeforeKey = attribute.Key("overtake.preemptions_before")
	// PreemptionsKey is the former name of [PreemptionsBeforeKey].
	//
	// Deprecated: use PreemptionsBeforeKey; the attribute it names is
	// overtake.preemptions_before.
	PreemptionsKey = PreemptionsBeforeKey
	// RunPreemptedKey is overtake.run.preempted, set when a run ends: true
	// when this run gave way to more urgent work, false otherwise.
	RunPreemptedKey = attribute.Key("overtake.run.preempted")
	// CheckpointBytesKey is overtake.checkpoint.bytes: checkpoint size.
	CheckpointBytesKey = attribute.Key("overtake.checkpoint.bytes")
	// ResultBytesKey is overtake.result.bytes: a stored result's size.
	ResultBytesKey = attribute.Key("overtake.result.bytes")
	// CheckpointSeqKey is overtake.checkpoint.seq: checkpoint sequence.
	CheckpointSeqKey = attribute.Key("overtake.checkpoint.seq")
	// PreemptedByKey is overtake.preempted.by: the preemptor's task ID.
	PreemptedByKey = attribute.Key("overtake.preempted.by")
	// PreemptedByLevelKey is overtake.preempted.by.level: its level.
	PreemptedByLevelKey = attribute.Key("overtake.preempted.by.level")
	// GraceMsKey is overtake.grace_ms: the victim's grace period in ms.
	GraceMsKey = attribute.Key("overtake.grace_ms")
	// VictimIDKey is overtake.victim.id: the task ID of the victim.
	VictimIDKey = attribute.Key("overtake.victim.id")
	// VictimSpanIDKey is overtake.victim.span_id on the preemptor's span:
	// the span ID of the victim's run, the span its victim link points to.
	VictimSpanIDKey = attribute.Key("overtake.victim.span_id")
	// PreviousRunSpanIDsKey is overtake.previous_run.span_ids on a process
	// span: the span IDs of the task's earlier runs, oldest first, the spans
	// its previous_run links point to.
	PreviousRunSpanIDsKey = attribute.Key("overtake.previous_run.span_ids")
	// LinkKindKey is overtake.link.kind on a process span's links: what the
	// link stands for, [LinkPreviousRun] or [LinkVictim]. Jaeger's UI shows
	// no link attributes, hence the span attributes VictimSpanIDKey and
	// PreviousRunSpanIDsKey, which say the same.
	LinkKindKey = attribute.Key("overtake.link.kind")
	// DeadKey is overtake.dead: true on the run after which the task was
	// dead-lettered, the run whose failure was final.
	DeadKey = attribute.Key("overtake.dead")
	// ClassKey is overtake.class: the logical priority class, if any.
	ClassKey = attribute.Key("overtake.class")
	// ReasonKey is overtake.reason: why a task was requeued or dead-lettered.
	ReasonKey = attribute.Key("overtake.reason")
	// RetryDelayMsKey is overtake.retry.delay_ms: backoff before the retry.
	RetryDelayMsKey = attribute.Key("overtake.retry.delay_ms")
	// WaitMsKey is overtake.wait_ms: how long the task waited, in ms.
	WaitMsKey = attribute.Key("overtake.wait_ms")
	// SLAMsKey is overtake.sla_ms: the longest wait its level's SLA allows.
	SLAMsKey = attribute.Key("overtake.sla_ms")
	// OutcomeKey is overtake.outcome: how a run ended (see [RunResult]).
	OutcomeKey = attribute.Key("overtake.outcome")
)

// Values of [LinkKindKey].
const (
	// LinkPreviousRun marks a link to an earlier run of the same task.
	LinkPreviousRun = "previous_run"
	// LinkVictim marks the link from a preemptor's run to its victim's run.
	LinkVictim = "victim"
)

// Values of messaging.* attributes that never change.
var (
	systemAttr        = MessagingSystemKey.String(System)
	opSendAttr        = semconv.MessagingOperationTypeSend
	opProcessAttr     = semconv.MessagingOperationTypeProcess
	opEnqueueNameAttr = OperationNameKey.String(OperationEnqueue)
	opProcessNameAttr = OperationNameKey.String(OperationProcess)
	// consumerKind is the kind of a process span, an option made once.
	consumerKind = trace.WithSpanKind(trace.SpanKindConsumer)
)
