package otlp

import (
	"context"
	"errors"
	"github.com/overtake/overtake/tracing"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// abortWait bounds how long Shutdown waits, after its context is done, for
// the cancelled background export to release the span exporter.
const abortWait = time.Second

// Providers holds what [Setup] built. Pass TracerProvider to [tracing.Tracer] and
// MeterProvider to [tracing.NewMetrics]; call Shutdown before the process exits.
type Providers struct {
	// TracerProvider is an SDK tracer provider with a batch span processor
	// exporting over OTLP.
	TracerProvider trace.TracerProvider
	// MeterProvider is an SDK meter provider with a periodic reader
	// exporting over OTLP, or a no-op provider with [WithoutMetrics].
	MeterProvider metric.MeterProvider
	// Propagator stores trace context in task headers; see [WithPropagator].
	Propagator tracing.Propagator

	tp        *sdktrace.TracerProvider
	mp        *sdkmetric.MeterProvider // nil WithoutMetrics
	exporter  *abortableExporter
	transport *http.Transport // OTLP/HTTP only

	shutdownOnce sync.Once
	shutdownErr  error
}

// Setup builds a tracer provider and a meter provider that export over
// OTLP, configured by opts and the standard OTEL_* environment variables.
// It sets no otel global unless [WithGlobal] is given.
func Setup(ctx context.Context, opts ...Option) (*Providers, error) {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	res, err := newResource(ctx, &c)
	if err != nil {
		return nil, err
	}
	se, err := newSpanExporter(ctx, &c)
	if err != nil {
		return nil, err
	}
	prop := c.propagator
	if prop == nil {
		prop = tracing.DefaultPropagator()
	}
	p := &Providers{Propagator: tracing.NewPropagator(prop), exporter: newAbortableExporter(se), transport: c.transport}
	var me sdkmetric.Exporter
	if !c.noMetrics {
		if me, err = newMetricExporter(ctx, &c); err != nil {
			return nil, errors.Join(err, se.Shutdown(ctx))
		}
	}

	topts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(p.exporter),
	}
	if c.sampler != nil {
		topts = append(topts, sdktrace.WithSampler(c.sampler))
	}
	p.tp = sdktrace.NewTracerProvider(topts...)
	p.TracerProvider = p.tp
	if me != nil {
		p.mp = sdkmetric.NewMeterProvider(
			sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)),
		)
		p.MeterProvider = p.mp
	} else {
		p.MeterProvider = metricnoop.NewMeterProvider()
	}

	if c.global {
		otel.SetTracerProvider(p.TracerProvider)
		otel.SetMeterProvider(p.MeterProvider)
		otel.SetTextMapPropagator(prop)
	}
	return p, nil
}

// newResource describes the service: the SDK defaults (telemetry.sdk.*,
// a fallback service.name), our options, then OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME, later ones winning.
func newResource(ctx context.Context, c *config) (*resource.Resource, error) {
	attrs := append([]attribute.KeyValue(nil), c.attrs...)
	if c.serviceName != "" {
		attrs = append(attrs, semconv.ServiceName(c.serviceName))
	}
	if c.serviceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(c.serviceVersion))
	}
	ours, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(attrs...),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, err
	}
	return resource.Merge(resource.Default(), ours)
}

// ForceFlush exports every finished span and the current metrics now.
func (p *Providers) ForceFlush(ctx context.Context) error {
	err := p.tp.ForceFlush(ctx)
	if p.mp != nil {
		err = errors.Join(err, p.mp.ForceFlush(ctx))
	}
	return err
}

// Shutdown flushes and stops both providers concurrently, within ctx, and
// returns their errors joined. Once ctx is done, exports still running are
// cancelled so no exporter goroutine outlives Shutdown by more than a
// moment. Later calls return the first call's result.
func (p *Providers) Shutdown(ctx context.Context) error {
	p.shutdownOnce.Do(func() { p.shutdownErr = p.shutdown(ctx) })
	return p.shutdownErr
}

func (p *Providers) shutdown(ctx context.Context) error {
	var (
		wg      sync.WaitGroup
		metrErr error
	)
	if p.mp != nil {
		wg.Go(func() { metrErr = p.mp.Shutdown(ctx) })
	}
	traceErr := p.tp.Shutdown(ctx)
	p.exporter.abort()
	select {
	case <-p.exporter.stopped:
	case <-time.After(abortWait):
	}
	wg.Wait()
	if p.transport != nil {
		p.transport.CloseIdleConnections()
	}
	return errors.Join(traceErr, metrErr)
}
