package otlp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overtake/overtake/internal/telemetry"

	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	collmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// fakeCollector is an OTLP/HTTP endpoint that keeps what it receives.
type fakeCollector struct {
	*httptest.Server
	mu      sync.Mutex
	traces  []*colltrace.ExportTraceServiceRequest
	metrics []*collmetric.ExportMetricsServiceRequest
}

func newFakeCollector(t *testing.T) *fakeCollector {
	t.Helper()
	c := &fakeCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var resp proto.Message
		c.mu.Lock()
		switch r.URL.Path {
		case "/v1/traces":
			req := &colltrace.ExportTraceServiceRequest{}
			err = proto.Unmarshal(body, req)
			c.traces = append(c.traces, req)
			resp = &colltrace.ExportTraceServiceResponse{}
		case "/v1/metrics":
			req := &collmetric.ExportMetricsServiceRequest{}
			err = proto.Unmarshal(body, req)
			c.metrics = append(c.metrics, req)
			resp = &collmetric.ExportMetricsServiceResponse{}
		default:
			err = io.ErrUnexpectedEOF
		}
		c.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.Close) // also closes the exporter's kept-alive connections
	return c
}

func (c *fakeCollector) hostport() string { return strings.TrimPrefix(c.URL, "http://") }

// clearOTELEnv keeps the caller's environment out of a Setup test.
func clearOTELEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		t.Setenv(k, "")
	}
}

// Spans and metrics reach the collector on Shutdown, not before: the batch
// delay (5 s) and metric interval (60 s) have not passed.
func TestSetupHTTPExportsOnShutdown(t *testing.T) {
	clearOTELEnv(t)
	c := newFakeCollector(t)
	ctx := context.Background()
	p, err := Setup(ctx, WithProtocol(ProtocolHTTP), WithEndpoint(c.hostport()), WithInsecure(),
		WithServiceName("worker"), WithServiceVersion("1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	_, span := telemetry.StartEnqueue(ctx, telemetry.Tracer(p.TracerProvider), telemetry.TaskInfo{Queue: "q", ID: "t1"})
	span.End()
	m, err := telemetry.NewMetrics(p.MeterProvider)
	if err != nil {
		t.Fatal(err)
	}
	m.RecordDead(ctx, telemetry.Labels{Queue: "q"})

	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.traces) != 1 || len(c.metrics) != 1 {
		t.Fatalf("collector got %d trace and %d metric posts, want 1 and 1", len(c.traces), len(c.metrics))
	}
	rs := c.traces[0].ResourceSpans[0]
	res := map[string]string{}
	for _, kv := range rs.Resource.Attributes {
		res[kv.Key] = kv.Value.GetStringValue()
	}
	if res["service.name"] != "worker" || res["service.version"] != "1.2.3" {
		t.Errorf("resource = %v", res)
	}
	if got := rs.ScopeSpans[0].Spans[0].Name; got != "enqueue q" {
		t.Errorf("span = %q", got)
	}
	if got := c.metrics[0].ResourceMetrics[0].ScopeMetrics[0].Metrics[0].Name; got != telemetry.MetricDead {
		t.Errorf("metric = %q", got)
	}
	if p.Shutdown(sctx) != nil {
		t.Error("second Shutdown returned an error after a clean first one")
	}
}

// OTEL_SERVICE_NAME overrides the option; WithoutMetrics sends no metrics.
func TestSetupEnvAndWithoutMetrics(t *testing.T) {
	clearOTELEnv(t)
	t.Setenv("OTEL_SERVICE_NAME", "from-env")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	c := newFakeCollector(t)
	p, err := Setup(context.Background(), WithEndpoint(c.hostport()), WithInsecure(),
		WithServiceName("from-option"), WithoutMetrics(), WithSampler(sdktrace.AlwaysSample()))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.MeterProvider.(metricnoop.MeterProvider); !ok {
		t.Errorf("MeterProvider = %T, want no-op", p.MeterProvider)
	}
	_, span := telemetry.Tracer(p.TracerProvider).Start(context.Background(), "s")
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.metrics) != 0 || len(c.traces) != 1 {
		t.Fatalf("posts: %d traces %d metrics", len(c.traces), len(c.metrics))
	}
	for _, kv := range c.traces[0].ResourceSpans[0].Resource.Attributes {
		if kv.Key == "service.name" && kv.Value.GetStringValue() != "from-env" {
			t.Errorf("service.name = %q, want from-env", kv.Value.GetStringValue())
		}
	}
}

// A collector that is not there must not hold Shutdown past its deadline,
// nor leave gRPC goroutines behind (TestMain checks).
func TestSetupGRPCUnreachableShutdownBounded(t *testing.T) {
	clearOTELEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	p, err := Setup(context.Background(), WithProtocol(ProtocolGRPC), WithEndpoint(addr), WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	_, span := telemetry.Tracer(p.TracerProvider).Start(context.Background(), "lost")
	span.End()
	m, err := telemetry.NewMetrics(p.MeterProvider)
	if err != nil {
		t.Fatal(err)
	}
	m.RecordDead(context.Background(), telemetry.Labels{Queue: "q"})

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = p.Shutdown(ctx)
	if took := time.Since(start); took > 300*time.Millisecond+abortWait+time.Second {
		t.Errorf("Shutdown took %v", took)
	}
	if err == nil {
		t.Error("Shutdown to an unreachable collector reported no error")
	}
}

func TestSetupGlobal(t *testing.T) {
	clearOTELEnv(t)
	c := newFakeCollector(t)
	p, err := Setup(context.Background(), WithEndpoint(c.hostport()), WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() == p.TracerProvider {
		t.Error("Setup without WithGlobal set the global tracer provider")
	}
	_ = p.Shutdown(context.Background())

	p, err = Setup(context.Background(), WithEndpoint(c.hostport()), WithInsecure(), WithGlobal())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
		_ = p.Shutdown(context.Background())
	}()
	if otel.GetTracerProvider() != p.TracerProvider || otel.GetMeterProvider() != p.MeterProvider {
		t.Error("WithGlobal did not set the global providers")
	}
}

func TestResolveProtocol(t *testing.T) {
	clearOTELEnv(t)
	cases := []struct {
		opt             Protocol
		general, traces string
		want            Protocol
		wantErr         bool
	}{
		{want: ProtocolHTTP},
		{opt: ProtocolGRPC, general: "http/protobuf", want: ProtocolGRPC},
		{general: "grpc", want: ProtocolGRPC},
		{general: "grpc", traces: "http/json", want: ProtocolHTTP},
		{general: "carrier-pigeon", wantErr: true},
	}
	for _, tc := range cases {
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.general)
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", tc.traces)
		got, err := resolveProtocol(tc.opt, "TRACES")
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%+v: got %q, %v", tc, got, err)
		}
	}
	if _, err := Setup(context.Background(), WithProtocol("smoke")); err == nil {
		t.Error("Setup accepted an unknown protocol")
	}
}
