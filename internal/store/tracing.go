package store

import (
	"context"
	"maps"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/overtake/overtake/internal/telemetry"
)

// traceparent is the W3C header holding a span context.
const traceparent = "traceparent"

// startEnqueue starts the producer span "enqueue <queue>/<type>" of nt and writes
// its trace context into nt.Headers (a copy: the caller's map is left
// alone) before the record is encoded. The parent is the span in ctx or,
// when ctx has none, the trace context already in nt.Headers (a task
// re-enqueued from another record continues that trace).
func (c *Store) startEnqueue(ctx context.Context, nt *Task) (context.Context, trace.Span) {
	prop := c.propagator()
	if !trace.SpanContextFromContext(ctx).IsValid() && len(nt.Headers) > 0 {
		ctx = prop.Extract(ctx, nt.Headers)
	}
	if telemetry.Silent(c.cfg.TracerProvider) {
		// The default provider with none registered behind it, or the
		// no-op one: its span would record nothing and carry the parent's
		// span context, so none is started (its attributes cost a tenth
		// of an Enqueue's CPU) and the headers get what that span would
		// have put there.
		nt.Headers = prop.Inject(ctx, maps.Clone(nt.Headers))
		return ctx, trace.SpanFromContext(context.Background()) // a no-op span
	}
	info := telemetry.TaskInfo{Queue: c.cfg.Name, ID: nt.ID, Type: nt.Type, Level: nt.Level,
		LevelName: c.LevelName(nt.Level), Class: nt.Class}
	ctx, span := telemetry.StartEnqueue(ctx, c.tracer, info,
		trace.WithAttributes(semconv.MessagingMessageBodySize(len(nt.Payload))))
	nt.Headers = prop.Inject(ctx, maps.Clone(nt.Headers))
	return ctx, span
}

// endEnqueue ends the producer span; a failed enqueue marks it as an error.
func endEnqueue(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (c *Store) propagator() telemetry.Propagator { return c.prop }

// TraceContext returns ctx carrying the producer's span context stored in
// t.Headers at enqueue, read with Config.Propagator: the parent of the
// worker's process span. Without one in the headers, ctx is returned as is.
func (c *Store) TraceContext(ctx context.Context, t *Info) context.Context {
	return c.propagator().Extract(ctx, t.Headers)
}

// runSpanContexts returns the span contexts in t.RunSpans, oldest first,
// skipping entries that do not parse: the process spans of the task's
// earlier runs, which a new run's span links to.
func (t *Task) runSpanContexts() []trace.SpanContext {
	out := make([]trace.SpanContext, 0, len(t.RunSpans))
	for _, s := range t.RunSpans {
		ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{traceparent: s})
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			out = append(out, sc)
		}
	}
	return out
}

// addRunSpan appends sc, the process span of the run now holding t, to
// t.RunSpans (keeping the last MaxRunSpans). The next Retry, DeadLetter or
// Requeue of t stores the list in the record, so the task's next run can
// link to this one. An invalid sc is ignored.
func (t *Task) addRunSpan(sc trace.SpanContext) {
	if !sc.IsValid() {
		return
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	t.RunSpans = append(t.RunSpans, carrier[traceparent])
	if n := len(t.RunSpans); n > MaxRunSpans {
		t.RunSpans = append([]string(nil), t.RunSpans[n-MaxRunSpans:]...)
	}
}

// runNumber returns which run of t a lease of it starts, 1 for the first:
// one more than the earlier runs its record knows of, those that ended in
// a retry, a requeue or a dead-letter transition (RunSpans) and those
// whose worker was lost (Recoveries). Exact while the task ran fewer than
// MaxRunSpans times to a transition; after that a lower bound.
func (t *Task) runNumber() int {
	ended := len(t.RunSpans)
	if ended >= MaxRunSpans {
		ended = max(ended, t.Attempt+t.Preemptions)
	}
	return ended + t.Recoveries + 1
}

// encodeRunSpans is the record value of t.RunSpans: its last MaxRunSpans
// entries separated by spaces, "" when there are none.
func encodeRunSpans(spans []string) string {
	if n := len(spans); n > MaxRunSpans {
		spans = spans[n-MaxRunSpans:]
	}
	return strings.Join(spans, " ")
}

// AddRunSpan records sc as the process span of t's current run.
func (*Store) AddRunSpan(t *Task, sc trace.SpanContext) { t.addRunSpan(sc) }

// RunSpanContexts returns the process spans of t's earlier runs.
func (*Store) RunSpanContexts(t *Task) []trace.SpanContext { return t.runSpanContexts() }

// RunNumber returns which run of t this is, from 1.
func (*Store) RunNumber(t *Task) int { return t.runNumber() }
