package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// defaultPropagator is W3C TraceContext plus W3C Baggage. It is ours, not
// the otel global, so other libraries cannot change what lands in a task
// record.
var defaultPropagator propagation.TextMapPropagator = &defaultProp{propagation.NewCompositeTextMapPropagator(
	propagation.TraceContext{},
	propagation.Baggage{},
)}

// defaultProp wraps the default propagator in a pointer, which an
// interface comparison can tell from any other (the composite holds a
// slice: comparing two of them would panic).
type defaultProp struct{ propagation.TextMapPropagator }

// DefaultPropagator returns the propagator used when none is given: W3C
// TraceContext plus W3C Baggage.
func DefaultPropagator() propagation.TextMapPropagator { return defaultPropagator }

// Propagator stores trace context in, and reads it from, a task's Headers.
// The zero value uses [DefaultPropagator].
type Propagator struct {
	p propagation.TextMapPropagator
}

// NewPropagator returns a Propagator that uses p; nil means
// [DefaultPropagator].
func NewPropagator(p propagation.TextMapPropagator) Propagator {
	return Propagator{p: p}
}

func (p Propagator) get() propagation.TextMapPropagator {
	if p.p == nil {
		return defaultPropagator
	}
	return p.p
}

// Inject writes the trace context (and baggage) of ctx into headers and
// returns headers. When headers is nil and there is something to write, a
// new map is allocated and returned, so call it as
// t.Headers = p.Inject(ctx, t.Headers).
func (p Propagator) Inject(ctx context.Context, headers map[string]string) map[string]string {
	if p.get() == defaultPropagator && !trace.SpanContextFromContext(ctx).IsValid() && baggage.FromContext(ctx).Len() == 0 {
		// The default propagator would write nothing: no map for it.
		return headers
	}
	carrier := propagation.MapCarrier(headers)
	if carrier == nil {
		carrier = propagation.MapCarrier{}
	}
	p.get().Inject(ctx, carrier)
	if headers == nil && len(carrier) == 0 {
		return nil
	}
	return carrier
}

// Extract returns ctx with the remote span context (and baggage) read from
// headers. With nil or empty headers it returns ctx unchanged.
func (p Propagator) Extract(ctx context.Context, headers map[string]string) context.Context {
	if len(headers) == 0 {
		return ctx
	}
	return p.get().Extract(ctx, propagation.MapCarrier(headers))
}

// SpanContextFromHeaders returns the remote span context stored in
// headers, invalid when there is none; use it to build span links.
func (p Propagator) SpanContextFromHeaders(headers map[string]string) trace.SpanContext {
	return trace.SpanContextFromContext(p.Extract(context.Background(), headers))
}

// Inject writes the trace context of ctx into headers with
// [DefaultPropagator] and returns headers, allocated if nil and needed:
// t.Headers = telemetry.Inject(ctx, t.Headers).
func Inject(ctx context.Context, headers map[string]string) map[string]string {
	return Propagator{}.Inject(ctx, headers)
}

// Extract returns ctx with the trace context read from headers with
// [DefaultPropagator].
func Extract(ctx context.Context, headers map[string]string) context.Context {
	return Propagator{}.Extract(ctx, headers)
}

// SpanContextFromHeaders returns the span context stored in headers by
// [Inject], invalid when there is none.
func SpanContextFromHeaders(headers map[string]string) trace.SpanContext {
	return Propagator{}.SpanContextFromHeaders(headers)
}
