package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// provider and exporter the tests build must be shut down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newRecorder returns a tracer provider that records ended spans in memory.
func newRecorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// newManualMetrics returns Metrics on a meter provider read by hand.
func newManualMetrics(t *testing.T) (*Metrics, *metric.ManualReader) {
	t.Helper()
	r := metric.NewManualReader()
	mp := metric.NewMeterProvider(metric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := NewMetrics(mp)
	if err != nil {
		t.Fatal(err)
	}
	return m, r
}

// collect reads r and returns the metrics of our scope by name.
func collect(t *testing.T, r *metric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != InstrumentationName {
			t.Errorf("scope = %q, want %q", sm.Scope.Name, InstrumentationName)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}
