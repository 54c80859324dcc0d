// Package tracing is Overtake's OpenTelemetry and zap face: log fields
// that lead from a handler's log lines to its trace, and the description
// of every span, event and metric Overtake emits. It depends on the
// OpenTelemetry API and zap only; OTLP setup and exporters are in package
// tracing/otlp, which only programs that export traces import.
//
// Overtake traces and measures itself: set queue.Config.TracerProvider
// (and Propagator) on the producer side and runtime.Config.TracerProvider
// and MeterProvider on the worker side, for example with the providers of
// [github.com/overtake/overtake/tracing/otlp.Setup], which exports over
// OTLP to Jaeger or any collector. This package holds what a handler uses
// to join its logs to those traces ([Logger], [LogFields]); what follows
// documents the spans, events and metrics as they appear in Jaeger.
//
// # Configuration
//
// Options win over the environment. The exporters read
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, _HEADERS, _TIMEOUT and the TLS
// variables themselves; Setup reads OTEL_EXPORTER_OTLP_PROTOCOL (and the
// per-signal variants, default http/protobuf); the resource honours
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; the SDK honours
// OTEL_TRACES_SAMPLER, OTEL_BSP_* and OTEL_METRIC_EXPORT_INTERVAL.
//
// # Spans
//
// "enqueue <queue>/<type>" (kind producer, messaging.operation.type
// "send") and "process <queue>/<type>" (kind consumer, "process"; without
// "/<type>" for a task that has none), following the OpenTelemetry
// messaging conventions (semconv v1.43.0): messaging.system "overtake",
// messaging.destination.name, messaging.message.id,
// messaging.operation.type, messaging.operation.name. Ours:
// overtake.task.type, overtake.level, overtake.level.name,
// overtake.attempt, overtake.preemptions, overtake.class and the event
// attributes (overtake.preempted.by, overtake.grace_ms, ...). Events:
// preempted, preempted.victim, checkpoint.saved, result.stored, resumed,
// requeued, retry, dead, canceled, sla.breached.
//
// # Metrics
//
// Meter "github.com/overtake/overtake". Every series carries
// messaging.destination.name, and all but overtake.worker.concurrency
// carry overtake.level and overtake.level.name.
//
//	| name                        | instrument      | unit   | extra attributes   |
//	|-----------------------------|-----------------|--------|--------------------|
//	| overtake.task.wait.duration | histogram       | s      |                    |
//	| overtake.task.run.duration  | histogram       | s      | overtake.outcome   |
//	| overtake.task.processed     | counter         | {task} |                    |
//	| overtake.task.failed        | counter         | {task} |                    |
//	| overtake.task.preempted     | counter         | {task} |                    |
//	| overtake.task.retried       | counter         | {task} |                    |
//	| overtake.task.requeued      | counter         | {task} |                    |
//	| overtake.task.dead          | counter         | {task} |                    |
//	| overtake.task.canceled      | counter         | {task} |                    |
//	| overtake.checkpoint.size    | histogram       | By     |                    |
//	| overtake.checkpoint.missed  | counter         | {task} | overtake.task.type |
//	| overtake.sla.breaches       | counter         | {task} |                    |
//	| overtake.queue.depth        | gauge (async)   | {task} |                    |
//	| overtake.worker.concurrency | gauge (async)   | {slot} | (no level)         |
//
// overtake.worker.concurrency is one worker's slots: its configured
// concurrency, or the value its autoscaler chose.
// processed counts runs that succeeded or failed (failed is a subset);
// preempted runs count only as preempted. overtake.checkpoint.missed counts
// preempted runs that returned with no checkpoint saved during the run.
// overtake.outcome is succeeded, failed or preempted.
//
// # Logs
//
// The runtime takes an injectable *zap.Logger (runtime.Config.Logger; by
// default warnings and errors go to stderr). Every line about a task
// carries task_id, task_type and task_level ([FieldTaskID], ...) and,
// when a tracer provider is installed, [LogFields] (trace_id, and span_id
// during a run), so a log line leads to its trace in Jaeger. A handler's logger from handlers.Logger(ctx) carries the same
// fields; [Logger] adds the trace fields of a context to a logger of
// one's own.
package tracing
