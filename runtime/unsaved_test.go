package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

const unsavedWarning = "preempted with no checkpoint saved: the next run starts over"

// A handler that returns after preemption without checkpoint.Save makes
// its task start over: each such run is counted (RunStats and the
// overtake.checkpoint.missed counter, with its type) and warned of once a
// minute per type. A run that saved during the run, even before it was
// preempted and not after, is not counted, nor is the urgent task.
func TestUnsavedPreemptionCountedAndWarnedOnce(t *testing.T) {
	tb := setupBundle(t, testredis.Mini(t), withTracing())
	started := make(chan string, 8)
	done := make(chan string, 8)
	lowRun := func(save bool) handlers.HandlerFunc {
		return func(ctx context.Context, tk *queue.TaskInfo) error {
			if tk.Preemptions > 0 { // the run after the preemption
				done <- tk.ID
				return nil
			}
			if save {
				require.NoError(t, checkpoint.Save(ctx, struct{ Step int }{1}))
			}
			started <- tk.ID
			<-ctx.Done()
			return context.Cause(ctx)
		}
	}
	mux := handlers.NewMux()
	mux.Handle("forgetful", lowRun(false))
	mux.Handle("saver", lowRun(true))
	mux.HandleFunc("urgent", func(context.Context, *queue.TaskInfo) error { return nil })
	rt := tb.start(t, context.Background(), mux, runtime.Config{Concurrency: 1})

	for _, typ := range []string{"forgetful", "saver", "forgetful", "forgetful"} {
		id := tb.enqueue(t, typ, 0)
		require.Equal(t, id, receive(t, started, typ+" started"))
		tb.enqueue(t, "urgent", 2)
		require.Equal(t, id, receive(t, done, typ+" resumed and done"))
	}

	st := rt.Stats()
	require.EqualValues(t, 4, st.Preempted)
	require.EqualValues(t, 3, st.UnsavedPreemptions, "the forgetful runs, not the saver's")
	missed := tb.metrics(t)[telemetry.MetricCheckpointMissed]
	require.EqualValues(t, 3, metricCount(t, missed, 0))
	for _, p := range missed.(metricdata.Sum[int64]).DataPoints {
		typ, _ := p.Attributes.Value(telemetry.TaskTypeKey)
		require.Equal(t, "forgetful", typ.AsString(), "overtake.checkpoint.missed by type")
	}
	warned := tb.logs.FilterMessage(unsavedWarning).All()
	require.Len(t, warned, 1, "three of one type within the minute: one line")
	e := warned[0]
	require.Equal(t, zapcore.WarnLevel, e.Level)
	for key, want := range map[string]string{"task_type": "forgetful", "checkpoint_seq": "0", "not_logged": "0"} {
		got, ok := fieldString(e, key)
		require.True(t, ok, "field %s", key)
		require.Equal(t, want, got, "field %s", key)
	}
	require.Zero(t, tb.logs.Filter(func(e observer.LoggedEntry) bool {
		typ, _ := fieldString(e, "task_type")
		return typ == "saver" && e.Level >= zapcore.WarnLevel
	}).Len(), "the saver is not warned of")
}
