package otlp

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newSpanExporter builds the OTLP span exporter for c.
func newSpanExporter(ctx context.Context, c *config) (sdktrace.SpanExporter, error) {
	p, err := resolveProtocol(c.protocol, "TRACES")
	if err != nil {
		return nil, err
	}
	if p == ProtocolGRPC {
		var opts []otlptracegrpc.Option
		if c.endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpoint(c.endpoint))
		}
		if c.insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithHTTPClient(c.httpClient())}
	if c.endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpoint(c.endpoint))
	}
	if c.insecure {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	return otlptracehttp.New(ctx, opts...)
}

// httpClient returns the client of the OTLP/HTTP exporters, on a
// transport of their own that Shutdown can close.
func (c *config) httpClient() *http.Client {
	if c.transport == nil {
		c.transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &http.Client{Transport: c.transport, Timeout: 10 * time.Second}
}

// newMetricExporter builds the OTLP metric exporter for c.
func newMetricExporter(ctx context.Context, c *config) (sdkmetric.Exporter, error) {
	p, err := resolveProtocol(c.protocol, "METRICS")
	if err != nil {
		return nil, err
	}
	if p == ProtocolGRPC {
		var opts []otlpmetricgrpc.Option
		if c.endpoint != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpoint(c.endpoint))
		}
		if c.insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithHTTPClient(c.httpClient())}
	if c.endpoint != "" {
		opts = append(opts, otlpmetrichttp.WithEndpoint(c.endpoint))
	}
	if c.insecure {
		opts = append(opts, otlpmetrichttp.WithInsecure())
	}
	return otlpmetrichttp.New(ctx, opts...)
}

// abortableExporter wraps a span exporter so that [Providers.Shutdown] can
// cut short exports still running once its context is done. The batch
// span processor gives up waiting at the deadline but keeps draining (and
// retrying) in the background for up to its export timeout; cancelling
// those exports lets it reach the exporter's Shutdown, which closes the
// connection, instead of leaving goroutines behind.
type abortableExporter struct {
	sdktrace.SpanExporter
	abortCtx context.Context
	abort    context.CancelFunc
	stopped  chan struct{} // closed when the wrapped Shutdown returned
	once     sync.Once
}

func newAbortableExporter(e sdktrace.SpanExporter) *abortableExporter {
	ctx, cancel := context.WithCancel(context.Background())
	return &abortableExporter{SpanExporter: e, abortCtx: ctx, abort: cancel, stopped: make(chan struct{})}
}

// ExportSpans exports spans, cancelled early by abort.
func (e *abortableExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(e.abortCtx, cancel)
	defer stop()
	return e.SpanExporter.ExportSpans(ctx, spans)
}

// Shutdown shuts the wrapped exporter down and signals stopped.
func (e *abortableExporter) Shutdown(ctx context.Context) error {
	defer e.once.Do(func() { close(e.stopped) })
	return e.SpanExporter.Shutdown(ctx)
}
