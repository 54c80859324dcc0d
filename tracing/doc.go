// Package tracing wires Overtake to OpenTelemetry and zap: the names of
// spans, events, attributes and metrics, trace-context propagation inside
// the task record, and log fields. It depends on the OpenTelemetry API only
// (OTLP setup and exporters are in package tracing/otlp), imports none of
// Overtake's packages and sets no otel global.
//
// # Main flow
//
//	p, err := otlp.Setup(ctx, // package tracing/otlp
//		otlp.WithServiceName("billing-worker"),
//		otlp.WithProtocol(otlp.ProtocolGRPC),
//		otlp.WithEndpoint("127.0.0.1:4317"), otlp.WithInsecure())
//	if err != nil { ... }
//	defer p.Shutdown(shutdownCtx) // flushes spans and metrics
//	tr := tracing.Tracer(p.TracerProvider)
//	m, err := tracing.NewMetrics(p.MeterProvider)
//
//	// Producer: the enqueue span's context travels in the task record.
//	ctx, span := tracing.StartEnqueue(ctx, tr, tracing.TaskInfo{Queue: "default", Type: t.Type, Level: t.Level})
//	t.Headers = tracing.Inject(ctx, t.Headers)
//	err = client.Enqueue(ctx, t)
//	span.End()
//
//	// Worker: the process span is a child of the enqueue span.
//	ctx, span := tracing.StartProcess(ctx, tr, info, t.Headers)
//	defer span.End()
//	log := tracing.Logger(ctx, logger).With(tracing.TaskFields(t.ID, t.Type, t.Level)...)
//	m.RecordWait(ctx, labels, time.Since(t.ReadyAt))
//	tracing.AddPreempted(span, urgent.ID, urgent.Level, grace) // when it gives way
//	tracing.AddCheckpointSaved(span, len(state), seq)
//	m.RecordRun(ctx, labels, elapsed, tracing.OutcomePreempted)
//
// The preemptor's span links to the victim's with [AddPreemptedVictim].
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
// "enqueue <queue>" (kind producer, messaging.operation.type "send") and
// "process <queue>" (kind consumer, "process"), following the OpenTelemetry
// messaging conventions (semconv v1.43.0): messaging.system "overtake",
// messaging.destination.name, messaging.message.id,
// messaging.operation.type, messaging.operation.name. Ours: see the *Key
// constants (overtake.task.type, overtake.level, overtake.level.name,
// overtake.attempt, overtake.preemptions, overtake.class, ...). Events:
// preempted, preempted.victim, checkpoint.saved, resumed, requeued, retry,
// dead, sla.breached.
//
// # Metrics
//
// Meter "github.com/overtake/overtake". Every series carries
// messaging.destination.name, and all but overtake.worker.concurrency
// carry overtake.level and overtake.level.name.
//
//	| name                        | instrument      | unit   | extra attributes |
//	|-----------------------------|-----------------|--------|------------------|
//	| overtake.task.wait.duration | histogram       | s      |                  |
//	| overtake.task.run.duration  | histogram       | s      | overtake.outcome |
//	| overtake.task.processed     | counter         | {task} |                  |
//	| overtake.task.failed        | counter         | {task} |                  |
//	| overtake.task.preempted     | counter         | {task} |                  |
//	| overtake.task.retried       | counter         | {task} |                  |
//	| overtake.task.requeued      | counter         | {task} |                  |
//	| overtake.task.dead          | counter         | {task} |                  |
//	| overtake.checkpoint.size    | histogram       | By     |                  |
//	| overtake.sla.breaches       | counter         | {task} |                  |
//	| overtake.queue.depth        | gauge (async)   | {task} |                  |
//	| overtake.worker.concurrency | gauge (async)   | {slot} | (no level)       |
//
// overtake.worker.concurrency is one worker's slots: its configured
// concurrency, or the value its autoscaler chose (see [Metrics.RegisterConcurrency]).
// processed counts runs that succeeded or failed (failed is a subset);
// preempted runs count only as preempted. overtake.outcome is succeeded,
// failed or preempted.
//
// # Logs
//
// The runtime takes an injectable *zap.Logger, zap.NewNop() by default
// ([LoggerOrNop]). Every line carries [TaskFields] (task_id, task_type,
// task_level) and [LogFields] (trace_id, span_id) so a log line leads to its
// trace in Jaeger.
package tracing
