// Command jaeger is a worker and a producer in one process that sends its
// traces to Jaeger over OTLP, so you can watch preemptions in the Jaeger UI.
//
// Every round it enqueues two long low-priority "report" tasks that save a
// checkpoint after each step, and a low "sync" task that fails on its first
// attempt; while both workers are busy with the reports, an urgent "alert"
// arrives and preempts one of them, which later resumes from its checkpoint.
// Each round is one trace in Jaeger (service overtake-example): the round's
// producer span, the enqueue span of every task, and under each the process
// span of every run, with the events preempted, checkpoint.saved, requeued,
// resumed, preempted.victim, retry and the links between runs.
//
// With Docker (Redis, Jaeger and this worker; UI on http://localhost:16686):
//
//	docker compose -f examples/jaeger/docker-compose.yml up --build
//
// Against a Redis and a Jaeger of your own:
//
//	REDIS_URL=redis://127.0.0.1:6379 \
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc \
//	go run ./examples/jaeger -rounds 3
//
// The OTLP exporter takes the standard OTEL_* variables (endpoint, protocol,
// headers, OTEL_SERVICE_NAME, ...). Jaeger stores traces only, so the
// example exports no metrics; point otlp.Setup at an OpenTelemetry
// Collector to get them too.
package main
