package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func TestInjectExtractRoundTrip(t *testing.T) {
	t.Parallel()
	tp, _ := newRecorder(t)
	ctx, span := Tracer(tp).Start(context.Background(), "producer")
	defer span.End()
	member, _ := baggage.NewMember("tenant", "acme")
	bag, _ := baggage.New(member)
	ctx = baggage.ContextWithBaggage(ctx, bag)

	headers := Inject(ctx, nil)
	if headers["traceparent"] == "" {
		t.Fatalf("no traceparent in %v", headers)
	}
	if headers["baggage"] != "tenant=acme" {
		t.Errorf("baggage = %q", headers["baggage"])
	}

	got := Extract(context.Background(), headers)
	sc := trace.SpanContextFromContext(got)
	if sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("extracted %v, want %v", sc, span.SpanContext())
	}
	if !sc.IsRemote() || !sc.IsSampled() {
		t.Errorf("extracted remote=%v sampled=%v, want both", sc.IsRemote(), sc.IsSampled())
	}
	if v := baggage.FromContext(got).Member("tenant").Value(); v != "acme" {
		t.Errorf("baggage tenant = %q", v)
	}
	if l := SpanContextFromHeaders(headers); !l.Equal(sc) {
		t.Errorf("SpanContextFromHeaders = %v, want %v", l, sc)
	}
}

func TestInjectKeepsExistingHeaders(t *testing.T) {
	t.Parallel()
	tp, _ := newRecorder(t)
	ctx, span := Tracer(tp).Start(context.Background(), "p")
	defer span.End()
	h := map[string]string{"x-user": "7"}
	out := Inject(ctx, h)
	if out["x-user"] != "7" || h["traceparent"] == "" {
		t.Errorf("Inject into existing map: %v", h)
	}
}

// Nothing to write costs no map: one allocation per Enqueue before.
func TestInjectNothingAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Inject(context.Background(), nil) }); n != 0 {
		t.Errorf("Inject without span or baggage allocates %v times", n)
	}
}

func TestInjectWithoutSpan(t *testing.T) {
	t.Parallel()
	if h := Inject(context.Background(), nil); h != nil {
		t.Errorf("Inject without span = %v, want nil", h)
	}
	// Baggage alone is still written.
	m, err := baggage.NewMember("tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	b, err := baggage.New(m)
	if err != nil {
		t.Fatal(err)
	}
	if h := Inject(baggage.ContextWithBaggage(context.Background(), b), nil); h["baggage"] != "tenant=acme" {
		t.Errorf("Inject with baggage only = %v", h)
	}
	if sc := SpanContextFromHeaders(nil); sc.IsValid() {
		t.Errorf("SpanContextFromHeaders(nil) valid: %v", sc)
	}
	if sc := SpanContextFromHeaders(map[string]string{"traceparent": "garbage"}); sc.IsValid() {
		t.Errorf("garbage traceparent gave %v", sc)
	}
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, 1)
	if Extract(ctx, nil) != ctx {
		t.Error("Extract(nil headers) changed ctx")
	}
}

// A propagator passed by the user replaces the default: a baggage-only
// one writes no traceparent.
func TestCustomPropagator(t *testing.T) {
	t.Parallel()
	tp, _ := newRecorder(t)
	ctx, span := Tracer(tp).Start(context.Background(), "p")
	defer span.End()
	ctx = baggage.ContextWithBaggage(ctx, mustBaggage(t, "k", "v"))
	p := NewPropagator(propagation.Baggage{})
	h := p.Inject(ctx, nil)
	if _, ok := h["traceparent"]; ok {
		t.Errorf("custom propagator wrote traceparent: %v", h)
	}
	if h["baggage"] != "k=v" {
		t.Errorf("baggage = %q", h["baggage"])
	}
	if p.SpanContextFromHeaders(h).IsValid() {
		t.Error("baggage-only propagator extracted a span context")
	}
}

func mustBaggage(t *testing.T, k, v string) baggage.Baggage {
	t.Helper()
	m, err := baggage.NewMember(k, v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := baggage.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
