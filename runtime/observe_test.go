package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/overtake/overtake/tracing"
)

// Tests of the runtime's observability: spans, events, links and
// attributes with the SDK's in-memory span recorder, metrics with a manual
// reader, log fields with zap's observer.

// spans waits until n ended spans named "<op> jobs" concern task id, and
// returns them in the order they ended.
func (o *testBundle) spans(t *testing.T, op, id string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		out = out[:0]
		for _, s := range o.rec.Ended() {
			a := attrMap(s.Attributes())
			if s.Name() == op+" jobs/"+a["overtake.task.type"].AsString() && a["messaging.message.id"].AsString() == id {
				out = append(out, s)
			}
		}
		return len(out) >= n
	}, 10*time.Second, 5*time.Millisecond, "%d %s span(s) of task %s", n, op, id)
	require.Len(t, out, n, "%s spans of task %s", op, id)
	return out
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

func spanEventNames(s sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
	}
	return names
}

// spanEvent returns the attributes of the only event called name.
func spanEvent(t *testing.T, s sdktrace.ReadOnlySpan, name string) map[attribute.Key]attribute.Value {
	t.Helper()
	var found []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			found = append(found, e)
		}
	}
	require.Len(t, found, 1, "events %q of %s: %v", name, s.Name(), spanEventNames(s))
	return attrMap(found[0].Attributes)
}

// metrics collects the bundle's metrics by name.
func (o *testBundle) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, o.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// metricCount sums a counter's, or counts a histogram's, data points at level.
func metricCount(t *testing.T, agg metricdata.Aggregation, level int) int64 {
	t.Helper()
	lv := attribute.Int(string(telemetry.LevelKey), level)
	var n int64
	switch d := agg.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if v, _ := p.Attributes.Value(telemetry.LevelKey); v == lv.Value {
				n += p.Value
			}
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if v, _ := p.Attributes.Value(telemetry.LevelKey); v == lv.Value {
				n += int64(p.Count)
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if v, _ := p.Attributes.Value(telemetry.LevelKey); v == lv.Value {
				n += int64(p.Count)
			}
		}
	case nil:
		return 0
	default:
		t.Fatalf("unexpected aggregation %T", agg)
	}
	return n
}

// requireTaskLogs checks that every log line about a task carries its ID,
// type, level and trace ID, and returns the lines about task id.
func (o *testBundle) requireTaskLogs(t *testing.T, id string, traceID trace.TraceID) []observer.LoggedEntry {
	t.Helper()
	var mine []observer.LoggedEntry
	for _, e := range o.logs.All() {
		f := e.ContextMap()
		if _, ok := f[tracing.FieldTaskID]; !ok {
			continue
		}
		for _, k := range []string{tracing.FieldTaskType, tracing.FieldLevel, tracing.FieldTraceID} {
			require.Contains(t, f, k, "log line %q: %v", e.Message, f)
		}
		if f[tracing.FieldTaskID] == id {
			require.Equal(t, traceID.String(), f[tracing.FieldTraceID], "log line %q", e.Message)
			mine = append(mine, e)
		}
	}
	require.NotEmpty(t, mine, "no log line about task %s", id)
	return mine
}

// A preemption, as the traces show it: the victim's run records preempted
// (by whom, at which level, with which grace), checkpoint.saved and
// requeued; the urgent task's span records preempted.victim and links to
// the victim's span; the resumed run is a new span in the victim's trace,
// linked to the preempted run, with resumed and the checkpoint's sequence.
func TestObservePreemption(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withTracing())
		type progress struct{ Step int }
		lowStarted, urgentRan := make(chan progress, 2), make(chan struct{}, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
			p, _, err := checkpoint.Load[progress](ctx)
			if err != nil {
				return err
			}
			if p.Step > 0 {
				lowStarted <- p
				return nil
			}
			if err := checkpoint.Save(ctx, progress{Step: 5}); err != nil {
				return err
			}
			lowStarted <- p
			<-ctx.Done()
			if err := checkpoint.Save(ctx, progress{Step: 7}); err != nil {
				return err
			}
			return context.Cause(ctx)
		})
		mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
			urgentRan <- struct{}{}
			return nil
		})
		grace := 3 * time.Second
		o.start(t, context.Background(), mux, runtime.Config{Concurrency: 1, GracePeriod: grace})
		lowID := o.enqueue(t, "low", 0)
		require.Equal(t, progress{}, receive(t, lowStarted, "low start"))
		urgentID := o.enqueue(t, "urgent", 2)
		receive(t, urgentRan, "urgent run")
		require.Equal(t, progress{Step: 7}, receive(t, lowStarted, "low resume"))

		lowEnq := o.spans(t, "enqueue", lowID, 1)[0]
		urgEnq := o.spans(t, "enqueue", urgentID, 1)[0]
		low := o.spans(t, "process", lowID, 2)
		urgent := o.spans(t, "process", urgentID, 1)[0]
		first, second := low[0], low[1]

		// One trace per task, from the producer to every run.
		for _, s := range low {
			require.Equal(t, trace.SpanKindConsumer, s.SpanKind())
			require.Equal(t, lowEnq.SpanContext().TraceID(), s.SpanContext().TraceID())
			require.Equal(t, lowEnq.SpanContext().SpanID(), s.Parent().SpanID(), "process span is a child of the enqueue span")
			a := attrMap(s.Attributes())
			require.Equal(t, "overtake", a["messaging.system"].AsString())
			require.Equal(t, "jobs", a["messaging.destination.name"].AsString())
			require.Equal(t, "process", a["messaging.operation.type"].AsString())
			require.Equal(t, "process", a["messaging.operation.name"].AsString())
			require.Equal(t, "low", a[telemetry.TaskTypeKey].AsString())
			require.EqualValues(t, 0, a[telemetry.LevelKey].AsInt64())
			require.Equal(t, "low", a[telemetry.LevelNameKey].AsString())
			require.EqualValues(t, 0, a[telemetry.AttemptKey].AsInt64())
		}
		require.Equal(t, urgEnq.SpanContext().SpanID(), urgent.Parent().SpanID())
		require.NotEqual(t, lowEnq.SpanContext().TraceID(), urgEnq.SpanContext().TraceID())

		// The preempted run.
		require.Equal(t, []string{"checkpoint.saved", "preempted", "checkpoint.saved", "requeued"}, spanEventNames(first))
		pre := spanEvent(t, first, "preempted")
		require.Equal(t, urgentID, pre[telemetry.PreemptedByKey].AsString())
		require.EqualValues(t, 2, pre[telemetry.PreemptedByLevelKey].AsInt64())
		require.EqualValues(t, grace.Milliseconds(), pre[telemetry.GraceMsKey].AsInt64())
		for i, e := range []sdktrace.Event{first.Events()[0], first.Events()[2]} {
			a := attrMap(e.Attributes)
			require.EqualValues(t, i+1, a[telemetry.CheckpointSeqKey].AsInt64())
			require.Positive(t, a[telemetry.CheckpointBytesKey].AsInt64())
		}
		require.Equal(t, "preempted", spanEvent(t, first, "requeued")[telemetry.ReasonKey].AsString())
		require.Equal(t, codes.Unset, first.Status().Code, "a preemption is not an error")
		require.Equal(t, "preempted", attrMap(first.Attributes())[telemetry.OutcomeKey].AsString())
		require.EqualValues(t, 0, attrMap(first.Attributes())[telemetry.PreemptionsBeforeKey].AsInt64())
		require.Empty(t, first.Links())

		// The urgent run: event and link to the victim's span.
		vic := spanEvent(t, urgent, "preempted.victim")
		require.Equal(t, lowID, vic[telemetry.VictimIDKey].AsString())
		require.EqualValues(t, 0, vic[telemetry.LevelKey].AsInt64())
		require.Len(t, urgent.Links(), 1)
		require.Equal(t, first.SpanContext(), urgent.Links()[0].SpanContext)
		require.Equal(t, lowID, attrMap(urgent.Links()[0].Attributes)[telemetry.VictimIDKey].AsString())
		require.Equal(t, codes.Ok, urgent.Status().Code)

		// The resumed run: a new span, linked to the preempted one.
		require.Equal(t, []string{"resumed"}, spanEventNames(second))
		res := spanEvent(t, second, "resumed")
		require.EqualValues(t, 2, res[telemetry.CheckpointSeqKey].AsInt64())
		require.EqualValues(t, 1, res[telemetry.PreemptionsBeforeKey].AsInt64())
		require.Len(t, second.Links(), 1)
		require.Equal(t, first.SpanContext().TraceID(), second.Links()[0].SpanContext.TraceID())
		require.Equal(t, first.SpanContext().SpanID(), second.Links()[0].SpanContext.SpanID())
		require.Equal(t, "previous_run", attrMap(second.Links()[0].Attributes)["overtake.link.kind"].AsString())
		require.EqualValues(t, 1, attrMap(second.Attributes())[telemetry.PreemptionsBeforeKey].AsInt64())
		require.Equal(t, codes.Ok, second.Status().Code)
		require.Equal(t, "succeeded", attrMap(second.Attributes())[telemetry.OutcomeKey].AsString())

		// Metrics per level.
		m := o.metrics(t)
		require.EqualValues(t, 1, metricCount(t, m[telemetry.MetricPreempted], 0))
		require.EqualValues(t, 1, metricCount(t, m[telemetry.MetricRequeued], 0))
		require.EqualValues(t, 1, metricCount(t, m[telemetry.MetricProcessed], 0))
		require.EqualValues(t, 1, metricCount(t, m[telemetry.MetricProcessed], 2))
		require.EqualValues(t, 0, metricCount(t, m[telemetry.MetricFailed], 0))
		require.EqualValues(t, 2, metricCount(t, m[telemetry.MetricWaitDuration], 0))
		require.EqualValues(t, 1, metricCount(t, m[telemetry.MetricWaitDuration], 2))
		require.EqualValues(t, 2, metricCount(t, m[telemetry.MetricRunDuration], 0))
		require.EqualValues(t, 2, metricCount(t, m[telemetry.MetricCheckpointSize], 0))
		gauge, ok := m[telemetry.MetricQueueDepth].(metricdata.Gauge[int64])
		require.True(t, ok, "queue depth gauge: %T", m[telemetry.MetricQueueDepth])
		require.NotEmpty(t, gauge.DataPoints)

		// Logs: every task line has ID, type, level and trace ID.
		lines := o.requireTaskLogs(t, lowID, lowEnq.SpanContext().TraceID())
		o.requireTaskLogs(t, urgentID, urgEnq.SpanContext().TraceID())
		var preemptLine bool
		for _, e := range lines {
			if e.Message == "task preempted by more urgent work" {
				preemptLine = true
				require.Equal(t, first.SpanContext().SpanID().String(), e.ContextMap()[tracing.FieldSpanID])
			}
		}
		require.True(t, preemptLine, "preemption logged")
	})
}

// A retry is a new process span linked to the failed run; the failed run's
// span has the error status, the exception and the retry event.
func TestObserveRetry(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withQueue(queue.Config{Backoff: func(int) time.Duration { return 10 * time.Millisecond }}), withTracing())
		var runs atomic.Int32
		done := make(chan struct{})
		mux := handlers.NewMux()
		mux.HandleFunc("flaky", func(ctx context.Context, tk *queue.TaskInfo) error {
			if runs.Add(1) == 1 {
				return errors.New("flaky failure")
			}
			close(done)
			return nil
		})
		o.start(t, context.Background(), mux, runtime.Config{Concurrency: 2, PollInterval: 20 * time.Millisecond})
		id := o.enqueue(t, "flaky", 1)
		receive(t, done, "second run")

		enq := o.spans(t, "enqueue", id, 1)[0]
		runs2 := o.spans(t, "process", id, 2)
		failed, ok := runs2[0], runs2[1]
		require.Equal(t, enq.SpanContext().SpanID(), failed.Parent().SpanID())
		require.Equal(t, enq.SpanContext().SpanID(), ok.Parent().SpanID())

		require.Equal(t, codes.Error, failed.Status().Code)
		require.Equal(t, "flaky failure", failed.Status().Description)
		require.Equal(t, []string{"exception", "retry"}, spanEventNames(failed))
		require.Equal(t, "flaky failure", spanEvent(t, failed, "exception")["exception.message"].AsString())
		retry := spanEvent(t, failed, "retry")
		require.EqualValues(t, 1, retry[telemetry.AttemptKey].AsInt64())
		require.EqualValues(t, 10, retry[telemetry.RetryDelayMsKey].AsInt64())
		require.Equal(t, "failed", attrMap(failed.Attributes())[telemetry.OutcomeKey].AsString())

		require.Len(t, ok.Links(), 1)
		require.Equal(t, failed.SpanContext().SpanID(), ok.Links()[0].SpanContext.SpanID())
		require.EqualValues(t, 1, attrMap(ok.Attributes())[telemetry.AttemptKey].AsInt64())
		require.Equal(t, codes.Ok, ok.Status().Code)
		require.Empty(t, spanEventNames(ok), "a retry without checkpoint is not a resume")

		m := o.metrics(t)
		require.EqualValues(t, 2, metricCount(t, m[telemetry.MetricProcessed], 1))
		require.EqualValues(t, 1, metricCount(t, m[telemetry.MetricFailed], 1))
		require.EqualValues(t, 1, metricCount(t, m[telemetry.MetricRetried], 1))
		require.EqualValues(t, 0, metricCount(t, m[telemetry.MetricDead], 1))
		o.requireTaskLogs(t, id, enq.SpanContext().TraceID())
	})
}

// A stored result is an event of the run that stored it, and a log line.
func TestObserveResult(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withTracing())
		mux := handlers.NewMux()
		mux.HandleFunc("report", func(ctx context.Context, _ *queue.TaskInfo) error {
			return handlers.SetResult(ctx, []byte(`{"rows":1200}`))
		})
		o.start(t, context.Background(), mux, runtime.Config{Concurrency: 1})
		id := o.enqueue(t, "report", 0)
		run := o.spans(t, "process", id, 1)[0]
		require.Equal(t, []string{"result.stored"}, spanEventNames(run))
		require.EqualValues(t, 13, spanEvent(t, run, "result.stored")[telemetry.ResultBytesKey].AsInt64())
		require.Equal(t, 1, o.logs.FilterMessage("result stored").FilterField(zap.Int("bytes", 13)).Len())
	})
}

// A panic and dead-lettering show in the span's status and events.
func TestObservePanicAndDead(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withTracing())
		mux := handlers.NewMux()
		mux.HandleFunc("panics", func(ctx context.Context, tk *queue.TaskInfo) error { panic("boom") })
		mux.HandleFunc("hopeless", func(ctx context.Context, tk *queue.TaskInfo) error {
			return handlers.SkipRetry(errors.New("bad input"))
		})
		o.start(t, context.Background(), mux, runtime.Config{Concurrency: 2})
		panicID := o.enqueue(t, "panics", 0, queue.MaxRetries(0))
		deadID := o.enqueue(t, "hopeless", 0)
		unknownID := o.enqueue(t, "nobody-handles-this", 0)

		s := o.spans(t, "process", panicID, 1)[0]
		require.Equal(t, codes.Error, s.Status().Code)
		require.Equal(t, "panic: boom", s.Status().Description)
		ex := spanEvent(t, s, "exception")
		require.Equal(t, "*handlers.PanicError", ex["exception.type"].AsString())
		require.Equal(t, "panic: boom", ex["exception.message"].AsString())
		require.Contains(t, ex["exception.stacktrace"].AsString(), "panic")
		require.Contains(t, spanEvent(t, s, "dead")[telemetry.ReasonKey].AsString(), "retries exhausted: 1 failed of at most 1 (the first run and 0 retries): panic: boom")

		for _, id := range []string{deadID, unknownID} {
			s := o.spans(t, "process", id, 1)[0]
			require.Equal(t, codes.Error, s.Status().Code)
			require.Equal(t, []string{"exception", "dead"}, spanEventNames(s))
			require.Equal(t, s.Status().Description, spanEvent(t, s, "dead")[telemetry.ReasonKey].AsString())
		}
		require.Contains(t, o.spans(t, "process", deadID, 1)[0].Status().Description, "bad input")

		m := o.metrics(t)
		require.EqualValues(t, 3, metricCount(t, m[telemetry.MetricDead], 0))
		require.EqualValues(t, 3, metricCount(t, m[telemetry.MetricFailed], 0))
		enq := o.spans(t, "enqueue", panicID, 1)[0]
		var logged bool
		for _, e := range o.requireTaskLogs(t, panicID, enq.SpanContext().TraceID()) {
			logged = logged || e.Message == "handler panicked"
		}
		require.True(t, logged)
	})
}

// A shutdown requeues the running task with requeued (shutdown); the next
// worker's run links to it. The process span's parent is the enqueue span
// even when the runtime's own context carries a span.
func TestObserveShutdownAndParent(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withTracing())
		started := make(chan int, 2)
		var runs atomic.Int32
		mux := handlers.NewMux()
		mux.HandleFunc("long", func(ctx context.Context, tk *queue.TaskInfo) error {
			n := int(runs.Add(1))
			started <- n
			if n > 1 {
				return nil
			}
			<-ctx.Done()
			return context.Cause(ctx)
		})
		appCtx, appSpan := o.tp.Tracer("app").Start(context.Background(), "worker main")
		defer appSpan.End()
		rt1 := o.start(t, appCtx, mux, runtime.Config{Concurrency: 1})
		id := o.enqueue(t, "long", 1)
		require.Equal(t, 1, receive(t, started, "first run"))
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(t, rt1.Shutdown(sctx))
		cancel()
		o.start(t, context.Background(), mux, runtime.Config{Concurrency: 1})
		require.Equal(t, 2, receive(t, started, "second run"))

		enq := o.spans(t, "enqueue", id, 1)[0]
		runs2 := o.spans(t, "process", id, 2)
		for _, s := range runs2 {
			require.Equal(t, enq.SpanContext().SpanID(), s.Parent().SpanID())
			require.NotEqual(t, appSpan.SpanContext().TraceID(), s.SpanContext().TraceID())
		}
		require.Equal(t, "shutdown", spanEvent(t, runs2[0], "requeued")[telemetry.ReasonKey].AsString())
		require.Equal(t, runs2[0].SpanContext().SpanID(), runs2[1].Links()[0].SpanContext.SpanID())
	})
}

// A task whose producer recorded no trace context gets a root process span;
// its log lines carry that span's trace ID.
func TestObserveUntracedProducer(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withTracing())
		producer, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "jobs", Shards: testShards(t),
			TracerProvider: noop.NewTracerProvider()})
		require.NoError(t, err)
		done := make(chan struct{})
		mux := handlers.NewMux()
		mux.HandleFunc("plain", func(ctx context.Context, tk *queue.TaskInfo) error {
			if !trace.SpanContextFromContext(ctx).IsValid() {
				return handlers.SkipRetry(fmt.Errorf("handler context has no span"))
			}
			close(done)
			return nil
		})
		o.start(t, context.Background(), mux, runtime.Config{Concurrency: 1})
		tk, err := producer.Enqueue(context.Background(), queue.NewTask("plain", nil))
		require.NoError(t, err)
		require.Empty(t, tk.Headers)
		receive(t, done, "run")
		s := o.spans(t, "process", tk.ID, 1)[0]
		require.False(t, s.Parent().IsValid(), "root span")
		o.requireTaskLogs(t, tk.ID, s.SpanContext().TraceID())
	})
}
