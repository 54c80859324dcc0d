package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/overtake/overtake/tracing"
)

// handlerLines returns the lines a handler logged with message msg.
func handlerLines(logs *observer.ObservedLogs, msg string) []map[string]any {
	var out []map[string]any
	for _, e := range logs.FilterMessage(msg).All() {
		out = append(out, e.ContextMap())
	}
	return out
}

// A handler's logger (handlers.Logger) is the runtime's with the task's
// fields: queue, worker, task_id, task_type, task_level and task_attempt
// of the run, and, with a tracer provider installed, the trace_id and
// span_id of the run's process span.
func TestHandlerLoggerCarriesTaskFields(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withTracing())
		spans := make(chan trace.SpanContext, 2)
		mux := handlers.NewMux()
		mux.HandleFunc("bill", func(ctx context.Context, tk *queue.TaskInfo) error {
			handlers.Logger(ctx).Info("billing")
			spans <- trace.SpanContextFromContext(ctx)
			if tk.Attempt == 0 {
				return handlers.RetryAfter(time.Millisecond, errors.New("upstream busy"))
			}
			return nil
		})
		o.start(t, context.Background(), mux, runtime.Config{Concurrency: 1, WorkerID: "w-log"})
		id := o.enqueue(t, "bill", 1)
		first, second := receive(t, spans, "first run"), receive(t, spans, "second run")

		lines := handlerLines(o.logs, "billing")
		require.Len(t, lines, 2)
		for i, sc := range []trace.SpanContext{first, second} {
			f := lines[i]
			require.Equal(t, "jobs", f["queue"])
			require.Equal(t, "w-log", f["worker"])
			require.Equal(t, id, f[tracing.FieldTaskID])
			require.Equal(t, "bill", f[tracing.FieldTaskType])
			require.EqualValues(t, 1, f[tracing.FieldLevel])
			require.EqualValues(t, i, f["task_attempt"])
			require.True(t, sc.IsValid())
			require.Equal(t, sc.TraceID().String(), f[tracing.FieldTraceID])
			require.Equal(t, sc.SpanID().String(), f[tracing.FieldSpanID])
		}
	})
}

// Without a tracer provider, on the producer's side or the worker's, a
// handler's lines carry the task's fields and no trace_id or span_id, and
// the runtime's lines about the task no trace_id.
func TestHandlerLoggerWithoutTracing(t *testing.T) {
	b := testredis.Mini(t)
	q := setup(t, b, queue.Config{})
	log, logs := observedLogger(t)
	done := make(chan struct{})
	mux := handlers.NewMux()
	mux.HandleFunc("bill", func(ctx context.Context, _ *queue.TaskInfo) error {
		defer close(done)
		handlers.Logger(ctx).Info("billing")
		return nil
	})
	startRuntime(t, q, mux, runtime.Config{Concurrency: 1, Logger: log})
	id := enqueue(t, q, "bill", "", 0)
	receive(t, done, "the run")

	lines := handlerLines(logs, "billing")
	require.Len(t, lines, 1)
	require.Equal(t, id, lines[0][tracing.FieldTaskID])
	require.NotContains(t, lines[0], tracing.FieldTraceID)
	require.NotContains(t, lines[0], tracing.FieldSpanID)
	n := 0 // nor do the runtime's lines about the task
	for _, e := range logs.All() {
		if f := e.ContextMap(); f[tracing.FieldTaskID] == id {
			n++
			require.NotContains(t, f, tracing.FieldTraceID, "%q", e.Message)
		}
	}
	require.Greater(t, n, 1)
}
