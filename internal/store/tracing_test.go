package store_test

import (
	"github.com/overtake/overtake/internal/mirror"
	"github.com/overtake/overtake/internal/store"

	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// tracedQueue returns a queue on b whose spans go to the returned recorder.
func tracedQueue(t *testing.T, b testredis.Backend, cfg queue.Config) (*queue.Client, *tracetest.SpanRecorder, trace.Tracer) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg.Namespace = b.Prefix
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = tp
	}
	q, err := queue.New(b.Client, cfg)
	require.NoError(t, err)
	return q, rec, tp.Tracer("test")
}

// spanAttrs returns the attributes of s by key.
func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// The producer span is a child of the caller's span, carries the messaging
// attributes and ours, and its context is what the record's headers hold.
func TestEnqueueSpan(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q, rec, tr := tracedQueue(t, b, queue.Config{Name: "mail", Classes: map[string]int{"paying": 2}})
		ctx, parent := tr.Start(context.Background(), "http request")
		callerHeaders := map[string]string{"x-tenant": "acme"}
		task := queue.NewTask("send", []byte("hello"), queue.Headers(callerHeaders))
		got, err := q.Enqueue(ctx, task, queue.Class("paying"), queue.ID("t-1"))
		require.NoError(t, err)
		parent.End()

		require.Equal(t, map[string]string{"x-tenant": "acme"}, callerHeaders, "the caller's map is not written to")
		spans := rec.Ended()
		require.Len(t, spans, 2)
		s := spans[0]
		require.Equal(t, "enqueue mail/send", s.Name())
		require.Equal(t, trace.SpanKindProducer, s.SpanKind())
		require.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
		require.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID())
		require.Equal(t, codes.Unset, s.Status().Code)
		a := spanAttrs(s)
		require.Equal(t, "overtake", a["messaging.system"].AsString())
		require.Equal(t, "mail", a["messaging.destination.name"].AsString())
		require.Equal(t, "t-1", a["messaging.message.id"].AsString())
		require.Equal(t, "send", a["messaging.operation.type"].AsString())
		require.Equal(t, "enqueue", a["messaging.operation.name"].AsString())
		require.EqualValues(t, 5, a["messaging.message.body.size"].AsInt64())
		require.Equal(t, "send", a[telemetry.TaskTypeKey].AsString())
		require.EqualValues(t, 2, a[telemetry.LevelKey].AsInt64())
		require.Equal(t, "high", a[telemetry.LevelNameKey].AsString())
		require.Equal(t, "paying", a[telemetry.ClassKey].AsString())

		// The stored record carries the span's context and the caller's header.
		stored, err := q.Inspect(context.Background(), got.ID)
		require.NoError(t, err)
		require.Equal(t, "acme", stored.Headers["x-tenant"])
		require.Contains(t, stored.Headers["traceparent"], s.SpanContext().SpanID().String())
		sc := trace.SpanContextFromContext(store.Of(q).TraceContext(context.Background(), mirror.Info(stored)))
		require.True(t, sc.IsRemote())
		require.Equal(t, s.SpanContext().TraceID(), sc.TraceID())
		require.Equal(t, s.SpanContext().SpanID(), sc.SpanID())
		require.Equal(t, got.Headers, stored.Headers, "Enqueue returns the stored headers")
	})
}

// Without a span in ctx, a trace context already in the task's headers is
// the parent (a task copied from another record continues that trace).
func TestEnqueueSpanParentFromHeaders(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q, rec, tr := tracedQueue(t, b, queue.Config{})
		ctx, old := tr.Start(context.Background(), "old")
		old.End()
		task := queue.NewTask("send", nil, queue.Headers(telemetry.Inject(ctx, nil)))
		_, err := q.Enqueue(context.Background(), task)
		require.NoError(t, err)
		s := rec.Ended()[1]
		require.Equal(t, old.SpanContext().TraceID(), s.SpanContext().TraceID())
		require.Equal(t, old.SpanContext().SpanID(), s.Parent().SpanID())
	})
}

// A refused enqueue ends its span with an error; a task refused before it
// is written (invalid) starts none.
func TestEnqueueSpanErrors(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q, rec, _ := tracedQueue(t, b, queue.Config{})
		ctx := context.Background()
		_, err := q.Enqueue(ctx, queue.NewTask("send", nil), queue.ID("dup"))
		require.NoError(t, err)
		_, err = q.Enqueue(ctx, queue.NewTask("send", nil), queue.ID("dup"))
		require.ErrorIs(t, err, queue.ErrDuplicateTask)
		_, err = q.Enqueue(ctx, queue.NewTask("", nil))
		require.ErrorIs(t, err, queue.ErrInvalidTask)

		spans := rec.Ended()
		require.Len(t, spans, 2)
		require.Equal(t, codes.Unset, spans[0].Status().Code)
		require.Equal(t, codes.Error, spans[1].Status().Code)
		require.Contains(t, spans[1].Status().Description, `"dup"`)
		require.Len(t, spans[1].Events(), 1)
		require.Equal(t, "exception", spans[1].Events()[0].Name)
	})
}

// EnqueueBatch records one producer span per task, each stored in its own
// record; a duplicate's span is an error.
func TestEnqueueBatchSpans(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q, rec, _ := tracedQueue(t, b, queue.Config{})
		ctx := context.Background()
		_, err := q.Enqueue(ctx, queue.NewTask("send", nil), queue.ID("taken"))
		require.NoError(t, err)
		a, c := queue.NewTask("send", nil), queue.NewTask("send", nil)
		dup := queue.NewTask("send", nil, queue.ID("taken"))
		out, err := q.EnqueueBatch(ctx, []*queue.Task{a, dup, c})
		require.ErrorIs(t, err, queue.ErrDuplicateTask)
		require.Nil(t, out[1])

		spans := rec.Ended()[1:]
		require.Len(t, spans, 3)
		byID := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range spans {
			byID[spanAttrs(s)["messaging.message.id"].AsString()] = s
		}
		require.Equal(t, codes.Error, byID["taken"].Status().Code)
		for _, tk := range []*queue.TaskInfo{out[0], out[2]} {
			s := byID[tk.ID]
			require.NotNil(t, s)
			require.Equal(t, codes.Unset, s.Status().Code)
			stored, err := q.Inspect(ctx, tk.ID)
			require.NoError(t, err)
			sc := trace.SpanContextFromContext(store.Of(q).TraceContext(ctx, mirror.Info(stored)))
			require.Equal(t, s.SpanContext().SpanID(), sc.SpanID())
		}
	})
}

// keyPropagator stores the trace ID and span ID under one custom header.
type keyPropagator struct{}

func (keyPropagator) Inject(ctx context.Context, c propagation.TextMapCarrier) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		c.Set("x-trace", sc.TraceID().String()+":"+sc.SpanID().String())
	}
}

func (keyPropagator) Extract(ctx context.Context, c propagation.TextMapCarrier) context.Context {
	tid, sid, ok := strings.Cut(c.Get("x-trace"), ":")
	if !ok {
		return ctx
	}
	var cfg trace.SpanContextConfig
	var err error
	if cfg.TraceID, err = trace.TraceIDFromHex(tid); err != nil {
		return ctx
	}
	if cfg.SpanID, err = trace.SpanIDFromHex(sid); err != nil {
		return ctx
	}
	cfg.TraceFlags, cfg.Remote = trace.FlagsSampled, true
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(cfg))
}

func (keyPropagator) Fields() []string { return []string{"x-trace"} }

// Config.Propagator decides how the trace context is stored and read.
func TestEnqueueCustomPropagator(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q, rec, _ := tracedQueue(t, b, queue.Config{Propagator: keyPropagator{}})
		got, err := q.Enqueue(context.Background(), queue.NewTask("send", nil))
		require.NoError(t, err)
		s := rec.Ended()[0]
		require.NotContains(t, got.Headers, "traceparent")
		require.Equal(t, s.SpanContext().TraceID().String()+":"+s.SpanContext().SpanID().String(), got.Headers["x-trace"])
		sc := trace.SpanContextFromContext(store.Of(q).TraceContext(context.Background(), mirror.Info(got)))
		require.Equal(t, s.SpanContext().SpanID(), sc.SpanID())
	})
}

// By default the queue uses the otel global tracer provider, also one set
// after New, and W3C trace context.
func TestEnqueueDefaultsToGlobalProvider(t *testing.T) {
	cfg := queue.Config{}.WithDefaults()
	require.NotNil(t, cfg.TracerProvider)
	require.Equal(t, telemetry.DefaultPropagator(), cfg.Propagator)

	b := testredis.Backends(t)[0]
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	// With a no-op global, nothing is added to the headers.
	otel.SetTracerProvider(noop.NewTracerProvider())
	q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix})
	require.NoError(t, err)
	got, err := q.Enqueue(context.Background(), queue.NewTask("send", nil))
	require.NoError(t, err)
	require.Empty(t, got.Headers)

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	otel.SetTracerProvider(tp)
	q, err = queue.New(b.Client, queue.Config{Namespace: b.Prefix})
	require.NoError(t, err)
	got, err = q.Enqueue(context.Background(), queue.NewTask("send", nil))
	require.NoError(t, err)
	require.Len(t, rec.Ended(), 1)
	require.Contains(t, got.Headers, "traceparent")
}

// RunSpans: the runtime adds the running span with AddRunSpan; Retry, DeadLetter
// and Requeue store the list in the record (bounded), Ack needs none, and
// the next lease reads it back.
func TestRunSpansStoredByTransitions(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q, _, tr := tracedQueue(t, b, queue.Config{})
		ctx := context.Background()
		lease := func() *store.Task {
			t.Helper()
			var res *store.LeaseResult
			require.Eventually(t, func() bool {
				var err error
				res, err = store.Of(q).Lease(ctx, store.LeaseRequest{Worker: "w"})
				require.NoError(t, err)
				return len(res.Tasks) == 1
			}, 5*time.Second, 5*time.Millisecond)
			return res.Tasks[0]
		}
		runSpan := func() trace.SpanContext {
			_, s := tr.Start(ctx, "run")
			s.End()
			return s.SpanContext()
		}
		got, err := q.Enqueue(ctx, queue.NewTask("send", nil), queue.MaxRetries(5))
		require.NoError(t, err)

		tk := lease()
		require.Empty(t, tk.RunSpans)
		require.Empty(t, store.Of(q).RunSpanContexts(tk))
		first := runSpan()
		store.Of(q).AddRunSpan(tk, first)
		store.Of(q).AddRunSpan(tk, trace.SpanContext{}) // ignored
		require.NoError(t, store.Of(q).Requeue(ctx, tk, store.RequeuePreempted))

		tk = lease()
		require.Equal(t, []trace.SpanContext{first.WithRemote(true)}, store.Of(q).RunSpanContexts(tk))
		second := runSpan()
		store.Of(q).AddRunSpan(tk, second)
		require.NoError(t, store.Of(q).Retry(ctx, tk, time.Now(), "boom"))

		tk = lease()
		require.Equal(t, []trace.SpanContext{first.WithRemote(true), second.WithRemote(true)}, store.Of(q).RunSpanContexts(tk))
		// Keeps the last store.MaxRunSpans, oldest first; garbage is skipped.
		var want []trace.SpanContext
		for range store.MaxRunSpans + 3 {
			sc := runSpan()
			store.Of(q).AddRunSpan(tk, sc)
			want = append(want, sc.WithRemote(true))
		}
		want = want[len(want)-store.MaxRunSpans:]
		require.Len(t, tk.RunSpans, store.MaxRunSpans)
		require.NoError(t, store.Of(q).DeadLetter(ctx, tk, "enough"))
		dead, err := store.Of(q).Inspect(ctx, got.ID)
		require.NoError(t, err)
		require.Equal(t, want, store.Of(q).RunSpanContexts(dead))

		dead.RunSpans = append(dead.RunSpans, "00-garbage", "")
		require.Equal(t, want, store.Of(q).RunSpanContexts(dead))
	})
}

// An ack of a task with run spans works whether the record is kept or not.
func TestRunSpansAck(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q, _, tr := tracedQueue(t, b, queue.Config{Retention: time.Hour})
		ctx := context.Background()
		got, err := q.Enqueue(ctx, queue.NewTask("send", nil))
		require.NoError(t, err)
		res, err := store.Of(q).Lease(ctx, store.LeaseRequest{Worker: "w"})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		_, s := tr.Start(ctx, "run")
		s.End()
		store.Of(q).AddRunSpan(res.Tasks[0], s.SpanContext())
		require.NoError(t, store.Of(q).Ack(ctx, res.Tasks[0]))
		done, err := q.Inspect(ctx, got.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StateDone, done.State)
	})
}
