package tracing

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLogFields(t *testing.T) {
	t.Parallel()
	if f := LogFields(context.Background()); f != nil {
		t.Errorf("LogFields without span = %v, want nil", f)
	}
	tp, _ := newRecorder(t)
	ctx, span := Tracer(tp).Start(context.Background(), "s")
	defer span.End()

	core, logs := observer.New(zapcore.InfoLevel)
	Logger(ctx, zap.New(core)).With(TaskFields("t1", "email", 2)...).Info("leased")
	got := logs.All()[0].ContextMap()
	sc := span.SpanContext()
	want := map[string]any{
		FieldTraceID: sc.TraceID().String(), FieldSpanID: sc.SpanID().String(),
		FieldTaskID: "t1", FieldTaskType: "email", FieldLevel: int64(2),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestLoggerNil(t *testing.T) {
	t.Parallel()
	if LoggerOrNop(nil) == nil || Logger(context.Background(), nil) == nil {
		t.Fatal("nil logger not replaced by a no-op one")
	}
	l := zap.NewExample()
	if LoggerOrNop(l) != l || Logger(context.Background(), l) != l {
		t.Error("a given logger was replaced")
	}
}
