package telemetry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/overtake/overtake/internal/telemetry"
)

// Enqueue and a run's start skip their span while the default provider,
// otel's global one, has no provider registered behind it, or the
// provider is otel's no-op one. That rests on two facts checked here (no
// test of this package registers a global provider): both are
// recognised, and a span either starts records nothing and carries its
// parent's span context, so skipping it changes no header.
func TestSilent(t *testing.T) {
	global := otel.GetTracerProvider()
	require.True(t, telemetry.Silent(global))
	np := noop.NewTracerProvider()
	require.True(t, telemetry.Silent(np), "a no-op provider given as is")
	require.True(t, telemetry.Silent(&np))
	sdk := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	require.False(t, telemetry.Silent(sdk))
	require.False(t, telemetry.Silent(nil))

	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	for _, tp := range []trace.TracerProvider{global, np} {
		_, span := telemetry.StartEnqueue(ctx, telemetry.Tracer(tp), telemetry.TaskInfo{Queue: "q", ID: "id", Type: "t"})
		span.End()
		require.False(t, span.IsRecording())
		require.True(t, span.SpanContext().Equal(parent), "the child carries its parent's span context")
	}
}
