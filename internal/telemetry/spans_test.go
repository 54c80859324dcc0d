package telemetry

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

	info.Attempt, info.Preemptions, info.Run = 1, 3, 5
	_, proc := StartProcess(context.Background(), tr, info, headers)
	proc.End()

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	e, p := spans[0], spans[1]
	if e.Name() != "enqueue mail/email:send" || e.SpanKind() != trace.SpanKindProducer {
		t.Errorf("enqueue span = %q %v", e.Name(), e.SpanKind())
	}
	if p.Name() != "process mail/email:send" || p.SpanKind() != trace.SpanKindConsumer {
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
		"overtake.preemptions_before": int64(3), "overtake.run.number": int64(5),
	})
	for _, k := range []attribute.Key{RunNumberKey, AttemptKey, PreemptionsBeforeKey} {
		if _, ok := attrs(e.Attributes())[k]; ok {
			t.Errorf("the enqueue span has %s, an attribute of a run", k)
		}
	}
}

// Span names carry the task type when there is one; never an ID.
func TestSpanNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{EnqueueSpanName("jobs", "report"), "enqueue jobs/report"},
		{ProcessSpanName("jobs", "report"), "process jobs/report"},
		{EnqueueSpanName("jobs", ""), "enqueue jobs"},
		{ProcessSpanName("jobs", ""), "process jobs"},
	} {
		if tc.got != tc.want {
			t.Errorf("span name %q, want %q", tc.got, tc.want)
		}
	}
}

// Links to earlier runs say what they are, on the link and, for Jaeger's
// UI, on the span.
func TestPreviousRunLinks(t *testing.T) {
	t.Parallel()
	if opts := PreviousRunLinks(nil); opts != nil {
		t.Errorf("no earlier run gave %d options", len(opts))
	}
	tp, rec := newRecorder(t)
	tr := Tracer(tp)
	_, r1 := StartProcess(context.Background(), tr, TaskInfo{Queue: "q", Run: 1}, nil)
	_, r2 := StartProcess(context.Background(), tr, TaskInfo{Queue: "q", Run: 2}, nil)
	r1.End()
	r2.End()
	prev := []trace.SpanContext{r1.SpanContext(), {}, r2.SpanContext()}
	_, r3 := StartProcess(context.Background(), tr, TaskInfo{Queue: "q", Run: 3}, nil, PreviousRunLinks(prev)...)
	r3.End()
	s := rec.Ended()[2]
	if len(s.Links()) != 2 || !s.Links()[0].SpanContext.Equal(r1.SpanContext()) || !s.Links()[1].SpanContext.Equal(r2.SpanContext()) {
		t.Fatalf("links = %v, want r1 and r2 (the invalid one skipped)", s.Links())
	}
	for _, l := range s.Links() {
		wantAttrs(t, "link", l.Attributes, map[attribute.Key]any{"overtake.link.kind": "previous_run"})
	}
	got := attrs(s.Attributes())[PreviousRunSpanIDsKey].AsStringSlice()
	want := []string{r1.SpanContext().SpanID().String(), r2.SpanContext().SpanID().String()}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("overtake.previous_run.span_ids = %v, want %v", got, want)
	}
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
	wantAttrs(t, EventResumed, eu[EventResumed], map[attribute.Key]any{
		"overtake.checkpoint.seq": int64(7), "overtake.preemptions_before": int64(1),
	})
	wantAttrs(t, EventRetry, eu[EventRetry], map[attribute.Key]any{
		"overtake.attempt": int64(2), "overtake.retry.delay_ms": int64(3000),
	})
	wantAttrs(t, EventDead, eu[EventDead], map[attribute.Key]any{"overtake.reason": "max retries"})

	links := u.Links()
	if len(links) != 1 || !links[0].SpanContext.Equal(v.SpanContext()) {
		t.Fatalf("links = %v, want one to the victim %v", links, v.SpanContext())
	}
	wantAttrs(t, "link", links[0].Attributes, map[attribute.Key]any{"overtake.victim.id": "low", "overtake.link.kind": "victim"})
	wantAttrs(t, "urgent span", u.Attributes(), map[attribute.Key]any{
		"overtake.victim.span_id": v.SpanContext().SpanID().String(), "overtake.dead": true,
	})
	if _, ok := attrs(v.Attributes())[DeadKey]; ok {
		t.Error("overtake.dead on a span that was not dead-lettered")
	}
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
	if _, ok := attrs(got.Attributes())[VictimSpanIDKey]; ok {
		t.Error("overtake.victim.span_id without a victim span")
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

// countingTracer starts no span: what StartProcess allocates is its own.
type countingTracer struct {
	trace.Tracer
	opts int
}

func (c *countingTracer) Start(ctx context.Context, _ string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	c.opts = len(opts)
	return ctx, trace.SpanFromContext(ctx)
}

// A process span's start allocates its name, one slice of attributes and
// one of options (the attributes' option boxed in it), whatever the task
// sets: a run starts one on every task.
func TestStartProcessAllocs(t *testing.T) {
	tr := &countingTracer{}
	info := TaskInfo{Queue: "mail", ID: "t1", Type: "email:send", Level: 2, LevelName: "high", Attempt: 1,
		Preemptions: 2, Run: 3, Class: "paying"}
	links := PreviousRunLinks([]trace.SpanContext{trace.SpanContextFromContext(Extract(context.Background(),
		map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}))})
	n := testing.AllocsPerRun(100, func() { StartProcess(context.Background(), tr, info, nil, links...) })
	if n > 4 {
		t.Errorf("%.0f allocations per StartProcess, want at most 4", n)
	}
	if tr.opts != 4 {
		t.Errorf("%d options, want the kind, the attributes and the 2 of the links", tr.opts)
	}
	if got := len(info.Attributes()); got != maxAttributes {
		t.Errorf("%d attributes of a task that sets every field, want maxAttributes (%d)", got, maxAttributes)
	}
}
