package tracing_test

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"

	"github.com/overtake/overtake/tracing"
)

// A handler's log line carries the trace and span IDs of the task's
// process span, so it leads to the trace in Jaeger.
func ExampleLogger() {
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(fixedIDs{}))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, span := tp.Tracer("example").Start(context.Background(), "process default/invoice")
	defer span.End()

	tracing.Logger(ctx, zap.NewExample()).Info("invoice sent")
	// Output: {"level":"info","msg":"invoice sent","trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"0102030405060708"}
}
