package tracing

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLogFields(t *testing.T) {
	t.Parallel()
	if f := LogFields(context.Background()); f != nil {
		t.Errorf("LogFields without span = %v, want nil", f)
	}
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	defer span.End()

	core, logs := observer.New(zapcore.InfoLevel)
	Logger(ctx, zap.New(core)).Info("leased")
	got := logs.All()[0].ContextMap()
	sc := span.SpanContext()
	want := map[string]any{FieldTraceID: sc.TraceID().String(), FieldSpanID: sc.SpanID().String()}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestLoggerNil(t *testing.T) {
	t.Parallel()
	if Logger(context.Background(), nil) == nil {
		t.Fatal("nil logger not replaced by a no-op one")
	}
	l := zap.NewExample()
	if Logger(context.Background(), l) != l {
		t.Error("a given logger was replaced without a span in ctx")
	}
}
