package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	"github.com/overtake/overtake/tracing/otlp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// sink is a local OTLP/HTTP collector that decodes and counts the spans it
// receives, then drops them; it answers 200 to every export.
type sink struct {
	srv      *httptest.Server
	spans    atomic.Int64
	requests atomic.Int64
	bytes    atomic.Int64
}

func newSink() *sink {
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve)) // listens on 127.0.0.1
	return s
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.requests.Add(1)
	s.bytes.Add(int64(len(body)))
	if r.URL.Path == "/v1/traces" {
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				s.spans.Add(int64(len(ss.GetSpans())))
			}
		}
	}
	// An empty message is a valid Export*ServiceResponse of either signal.
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// discard is a span exporter that counts spans and drops them, for
// telling the SDK's own cost from OTLP's (--trace-exporter discard).
type discard struct{ spans atomic.Int64 }

func (d *discard) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	d.spans.Add(int64(len(spans)))
	return nil
}

func (d *discard) Shutdown(context.Context) error { return nil }

func (s *sink) endpoint() string { return strings.TrimPrefix(s.srv.URL, "http://") }

func (s *sink) close() { s.srv.Close() }

// providers sets up tracing the way a worker does, through otlp.Setup:
// an SDK tracer provider that samples every span, with a batch span
// processor exporting OTLP/HTTP to the sink; metrics too when withMetrics.
func providers(ctx context.Context, s *sink, withMetrics bool) (*otlp.Providers, error) {
	opts := []otlp.Option{
		otlp.WithProtocol(otlp.ProtocolHTTP),
		otlp.WithEndpoint(s.endpoint()),
		otlp.WithInsecure(),
		otlp.WithSampler(sdktrace.AlwaysSample()),
		otlp.WithServiceName("overtake-bench"),
	}
	if !withMetrics {
		opts = append(opts, otlp.WithoutMetrics())
	}
	return otlp.Setup(ctx, opts...)
}
