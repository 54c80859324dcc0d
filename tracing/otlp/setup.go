package otlp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/overtake/overtake/internal/telemetry"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// abortWait bounds how long Shutdown waits, after its context is done, for
// the cancelled background export to release the span exporter.
const abortWait = time.Second

// Providers holds what [Setup] built. Pass TracerProvider and MeterProvider
// to queue.Config and runtime.Config, and Propagator to queue.Config; call
// Shutdown before the process exits.
type Providers struct {
	// TracerProvider is an SDK tracer provider with a batch span processor
	// exporting over OTLP.
	TracerProvider trace.TracerProvider
	// MeterProvider is an SDK meter provider with a periodic reader
	// exporting over OTLP, or a no-op provider with [WithoutMetrics].
	MeterProvider metric.MeterProvider
	// Propagator stores trace context in task headers; see [WithPropagator].
	Propagator propagation.TextMapPropagator
	// Resource describes this process on every span and metric: service,
	// host and process attributes (see [Setup]).
	Resource *resource.Resource
	// InstanceID is the resource's service.instance.id. Pass it as
	// runtime.Config.WorkerID, so the worker's ID in Redis, in its logs
	// and on its spans is one name.
	InstanceID string

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
//
// Their resource holds, from the SDK's detectors, telemetry.sdk.*,
// host.name, host.id (where the OS has one), process.pid,
// process.executable.name and .path, process.owner and process.runtime.*
// (not process.command_args: a command line can carry a password), and
// service.name ([WithServiceName], default "unknown_service:<executable>"),
// service.version ([WithServiceVersion], default: the main module's version from its build info) and
// service.instance.id ([WithServiceInstanceID], default
// "<host>-<pid>-<6 random hex digits>"). OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME win over all of these. host.name matters to Jaeger:
// without it Jaeger takes every span for one from another host and warns
// about clock skew between a task's producer and its runs.
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
		prop = telemetry.DefaultPropagator()
	}
	p := &Providers{Propagator: prop, Resource: res, exporter: newAbortableExporter(se),
		transport: c.transport}
	if v, ok := res.Set().Value(semconv.ServiceInstanceIDKey); ok {
		p.InstanceID = v.String()
	}
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
