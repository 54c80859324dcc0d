package tracing

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// attrs returns kv as a map for lookups.
func attrs(kv []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(kv))
	for _, a := range kv {
		m[a.Key] = a.Value
	}
	return m
}

func wantAttrs(t *testing.T, where string, got []attribute.KeyValue, want map[attribute.Key]any) {
	t.Helper()
	m := attrs(got)
	for k, v := range want {
		if g, ok := m[k]; !ok || g.AsInterface() != v {
			t.Errorf("%s: %s = %v (present %v), want %v", where, k, g.AsInterface(), ok, v)
		}
	}
}

// The enqueue and process spans follow the messaging conventions and are
// joined through the headers only, as they would be across processes.
func TestEnqueueProcessSpans(t *testing.T) {
	t.Parallel()
	tp, rec := newRecorder(t)
	tr := Tracer(tp)
	info := TaskInfo{Queue: "mail", ID: "t1", Type: "email:send", Level: 2, LevelName: "high", Class: "paying"}

	ctx, enq := StartEnqueue(context.Background(), tr, info)
	headers := Inject(ctx, nil)
	enq.End()

	info.Attempt, info.Preemptions = 1, 3
	_, proc := StartProcess(context.Background(), tr, info, headers)
	proc.End()

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	e, p := spans[0], spans[1]
	if e.Name() != "enqueue mail" || e.SpanKind() != trace.SpanKindProducer {
		t.Errorf("enqueue span = %q %v", e.Name(), e.SpanKind())
	}
	if p.Name() != "process mail" || p.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("process span = %q %v", p.Name(), p.SpanKind())
	}
	if p.Parent().SpanID() != e.SpanContext().SpanID() || p.SpanContext().TraceID() != e.SpanContext().TraceID() {
		t.Errorf("process parent = %v, want enqueue %v", p.Parent(), e.SpanContext())
	}
	if got := e.InstrumentationScope().Name; got != InstrumentationName {
		t.Errorf("scope = %q", got)
	}
	wantAttrs(t, "enqueue", e.Attributes(), map[attribute.Key]any{
		"messaging.system": "overtake", "messaging.destination.name": "mail",
		"messaging.message.id": "t1", "messaging.operation.type": "send",
		"messaging.operation.name": "enqueue", "overtake.task.type": "email:send",
		"overtake.level": int64(2), "overtake.level.name": "high", "overtake.class": "paying",
	})
	wantAttrs(t, "process", p.Attributes(), map[attribute.Key]any{
		"messaging.system": "overtake", "messaging.operation.type": "process",
		"messaging.operation.name": "process", "overtake.attempt": int64(1),
		"overtake.preemptions": int64(3),
	})
}

func TestTaskInfoOmitsEmpty(t *testing.T) {
	t.Parallel()
	m := attrs(TaskInfo{Queue: "q"}.Attributes())
	for _, k := range []attribute.Key{MessageIDKey, TaskTypeKey, LevelNameKey, ClassKey} {
		if _, ok := m[k]; ok {
			t.Errorf("%s present for empty value", k)
		}
	}
	if _, ok := m[LevelKey]; !ok {
		t.Error("overtake.level missing at level 0")
	}
}

// A preemption shows on both spans, and the preemptor links to the victim.
func TestPreemptionEvents(t *testing.T) {
	t.Parallel()
	tp, rec := newRecorder(t)
	tr := Tracer(tp)
	_, victim := StartProcess(context.Background(), tr, TaskInfo{Queue: "q", ID: "low", Level: 0}, nil)
	_, urgent := StartProcess(context.Background(), tr, TaskInfo{Queue: "q", ID: "hi", Level: 3}, nil)

	AddPreempted(victim, "hi", 3, 1500*time.Millisecond)
	AddCheckpointSaved(victim, 42, 7)
	AddRequeued(victim, "preempted")
	AddPreemptedVictim(urgent, victim.SpanContext(), "low", 0)
	AddResumed(urgent, 7, 1)
	AddRetry(urgent, 2, 3*time.Second)
	AddDead(urgent, "max retries")
	victim.End()
	urgent.End()

	spans := rec.Ended()
	v, u := spans[0], spans[1]
	ev := events(v)
	wantAttrs(t, EventPreempted, ev[EventPreempted], map[attribute.Key]any{
		"overtake.preempted.by": "hi", "overtake.preempted.by.level": int64(3), "overtake.grace_ms": int64(1500),
	})
	wantAttrs(t, EventCheckpointSaved, ev[EventCheckpointSaved], map[attribute.Key]any{
		"overtake.checkpoint.bytes": int64(42), "overtake.checkpoint.seq": int64(7),
	})
	wantAttrs(t, EventRequeued, ev[EventRequeued], map[attribute.Key]any{"overtake.reason": "preempted"})

	eu := events(u)
	wantAttrs(t, EventPreemptedVictim, eu[EventPreemptedVictim], map[attribute.Key]any{
		"overtake.victim.id": "low", "overtake.level": int64(0),
	})
	wantAttrs(t, EventResumed, eu[EventResumed], map[attribute.Key]any{"overtake.checkpoint.seq": int64(7)})
	wantAttrs(t, EventRetry, eu[EventRetry], map[attribute.Key]any{
		"overtake.attempt": int64(2), "overtake.retry.delay_ms": int64(3000),
	})
	wantAttrs(t, EventDead, eu[EventDead], map[attribute.Key]any{"overtake.reason": "max retries"})

	links := u.Links()
	if len(links) != 1 || !links[0].SpanContext.Equal(v.SpanContext()) {
		t.Fatalf("links = %v, want one to the victim %v", links, v.SpanContext())
	}
	wantAttrs(t, "link", links[0].Attributes, map[attribute.Key]any{"overtake.victim.id": "low"})
}

func TestSLABreachedEvent(t *testing.T) {
	t.Parallel()
	tp, rec := newRecorder(t)
	_, s := StartProcess(context.Background(), Tracer(tp), TaskInfo{Queue: "q", Level: 2}, nil)
	AddSLABreached(s, 1, 2500*time.Millisecond, 2*time.Second)
	s.End()
	wantAttrs(t, EventSLABreached, events(rec.Ended()[0])[EventSLABreached], map[attribute.Key]any{
		"overtake.level": int64(1), "overtake.wait_ms": int64(2500), "overtake.sla_ms": int64(2000),
	})
}

// An invalid victim span context adds the event but no link.
func TestPreemptedVictimWithoutSpan(t *testing.T) {
	t.Parallel()
	tp, rec := newRecorder(t)
	_, s := StartProcess(context.Background(), Tracer(tp), TaskInfo{Queue: "q"}, nil)
	AddPreemptedVictim(s, trace.SpanContext{}, "low", 0)
	s.End()
	got := rec.Ended()[0]
	if len(got.Links()) != 0 || len(got.Events()) != 1 {
		t.Errorf("links %d events %d, want 0 and 1", len(got.Links()), len(got.Events()))
	}
}

func TestTracerNil(t *testing.T) {
	t.Parallel()
	_, s := Tracer(nil).Start(context.Background(), "x")
	if s.SpanContext().IsValid() {
		t.Error("nil provider gave a recording span")
	}
}

func events(s sdktrace.ReadOnlySpan) map[string][]attribute.KeyValue {
	out := map[string][]attribute.KeyValue{}
	for _, e := range s.Events() {
		out[e.Name] = e.Attributes
	}
	return out
}
