// Package otlp sets up OpenTelemetry export over OTLP (gRPC or HTTP) for
// Overtake: [Setup] builds an SDK tracer provider and meter provider from
// options and the standard OTEL_* environment variables.
//
// It is apart from package tracing so that a program that only enqueues
// (queue, handlers, checkpoint, runtime) links the OpenTelemetry API alone,
// without the SDK, the exporters or a gRPC stack; import it only in
// programs that export telemetry. A producer:
//
//	p, err := otlp.Setup(ctx,
//		otlp.WithServiceName("billing-worker"),
//		otlp.WithProtocol(otlp.ProtocolGRPC),
//		otlp.WithEndpoint("127.0.0.1:4317"), otlp.WithInsecure())
//	if err != nil {
//		return err
//	}
//	defer func() { _ = p.Shutdown(shutdownCtx) }() // flushes spans and metrics
//	q, err := queue.New(rdb, queue.Config{TracerProvider: p.TracerProvider})
//
// A worker gives both providers to its runtime:
// runtime.Config{TracerProvider: p.TracerProvider, MeterProvider:
// p.MeterProvider}.
package otlp
