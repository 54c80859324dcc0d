package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// requireState waits until task id is in state want.
func requireState(t *testing.T, q *queue.Client, id string, want queue.State) *queue.TaskInfo {
	t.Helper()
	var got *queue.TaskInfo
	require.Eventually(t, func() bool {
		var err error
		got, err = q.Inspect(context.Background(), id)
		return err == nil && got.State == want
	}, longWait, 5*time.Millisecond, "task %s never %s (last: %+v)", id, want, got)
	return got
}

// blockingHandler runs until its context ends, reporting its start and
// the cause on the channels, then returns returned(ctx).
func blockingHandler(started chan<- string, causes chan<- error, returned func(ctx context.Context) error) handlers.HandlerFunc {
	return func(ctx context.Context, tk *queue.TaskInfo) error {
		started <- tk.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return returned(ctx)
	}
}

// A running task's handler sees its context cancelled with
// handlers.ErrCanceled, whatever it returns but nil the task ends
// canceled, and it is counted canceled (RunStats, the metric, the span's
// event, Stats per level), not processed nor failed.
func TestCancelRunningTask(t *testing.T) {
	returns := map[string]func(ctx context.Context) error{
		"ctx error":  func(ctx context.Context) error { return ctx.Err() },
		"skip retry": func(context.Context) error { return handlers.SkipRetry(errors.New("stop")) },
		"yield":      func(context.Context) error { return handlers.ErrYield },
	}
	for name, ret := range returns {
		t.Run(name, func(t *testing.T) {
			testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
				o := setupBundle(t, b, withQueue(queue.Config{Retention: time.Hour, Levels: 3}), withTracing())
				started, causes := make(chan string, 4), make(chan error, 4)
				rt := o.start(t, context.Background(), blockingHandler(started, causes, ret), runtime.Config{Concurrency: 1})
				id := o.enqueue(t, "long", 1, queue.MaxRetries(5))
				require.Equal(t, id, receive(t, started, "the handler's start"))
				require.NoError(t, o.q.Cancel(context.Background(), id))
				require.ErrorIs(t, receive(t, causes, "the handler's cancel"), handlers.ErrCanceled)
				got := requireState(t, o.q, id, queue.StateCanceled)
				require.Equal(t, "canceled", got.LastError)
				require.Eventually(t, func() bool { return rt.Stats().Canceled == 1 }, longWait, 5*time.Millisecond)
				st := rt.Stats()
				require.Zero(t, st.Processed+st.Failed+st.Dead, "RunStats %+v", st)
				span := o.spans(t, "process", id, 1)[0]
				require.Contains(t, spanEventNames(span), telemetry.EventCanceled)
				require.Eventually(t, func() bool {
					return metricCount(t, o.metrics(t)[telemetry.MetricCanceled], 1) == 1
				}, longWait, 5*time.Millisecond)
				stats, err := o.q.Stats(context.Background())
				require.NoError(t, err)
				require.Equal(t, []int64{0, 1, 0}, []int64{stats.Levels[0].Canceled, stats.Levels[1].Canceled,
					stats.Levels[2].Canceled})
				require.Zero(t, stats.Levels[1].Active+stats.Levels[1].Pending+stats.Levels[1].Scheduled)
				require.NoError(t, o.q.Cancel(context.Background(), id), "a second cancel is no error")
				require.Empty(t, started, "a canceled task never runs again")
			})
		})
	}
}

// A handler that succeeds although its cancel was requested wins: the
// task is done, counted processed.
func TestCancelLosesToSuccess(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withQueue(queue.Config{Retention: time.Hour}))
		started, causes := make(chan string, 1), make(chan error, 1)
		rt := o.start(t, context.Background(), blockingHandler(started, causes,
			func(context.Context) error { return nil }), runtime.Config{Concurrency: 1})
		id := o.enqueue(t, "long", 0)
		receive(t, started, "the handler's start")
		require.NoError(t, o.q.Cancel(context.Background(), id))
		require.ErrorIs(t, receive(t, causes, "the handler's cancel"), handlers.ErrCanceled)
		requireState(t, o.q, id, queue.StateDone)
		require.Eventually(t, func() bool { return rt.Stats().Processed == 1 }, longWait, 5*time.Millisecond)
		require.Zero(t, rt.Stats().Canceled)
		require.ErrorIs(t, o.q.Cancel(context.Background(), id), queue.ErrTaskFinished)
	})
}

// A waiting task is canceled before any worker runs it.
func TestCancelPendingNeverRuns(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withQueue(queue.Config{Retention: time.Hour}))
		canceled := o.enqueue(t, "job", 0)
		later := o.enqueue(t, "job", 0, queue.ProcessIn(time.Millisecond))
		require.NoError(t, o.q.Cancel(context.Background(), canceled))
		require.NoError(t, o.q.Cancel(context.Background(), later))
		kept := o.enqueue(t, "job", 0)
		ran := make(chan string, 3)
		o.start(t, context.Background(), handlers.HandlerFunc(func(_ context.Context, tk *queue.TaskInfo) error {
			ran <- tk.ID
			return nil
		}), runtime.Config{Concurrency: 1})
		require.Equal(t, kept, receive(t, ran, "the task not canceled"))
		requireState(t, o.q, canceled, queue.StateCanceled)
		requireState(t, o.q, later, queue.StateCanceled)
		require.Empty(t, ran)
	})
}

// A handler that ignores its cancel past the grace period is what a
// stuck preempted run is: counted and logged, it keeps its slot and
// lease; when it returns at last, the task ends canceled.
func TestCancelIgnoredPastGrace(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withQueue(queue.Config{Retention: time.Hour}))
		started, release := make(chan string, 1), make(chan struct{})
		rt := o.start(t, context.Background(), handlers.HandlerFunc(func(_ context.Context, tk *queue.TaskInfo) error {
			started <- tk.ID
			<-release
			return errors.New("late")
		}), runtime.Config{Concurrency: 1, GracePeriod: 20 * time.Millisecond})
		id := o.enqueue(t, "stubborn", 0)
		receive(t, started, "the handler's start")
		require.NoError(t, o.q.Cancel(context.Background(), id))
		require.Eventually(t, func() bool { return rt.Stats().Stuck == 1 }, longWait, 5*time.Millisecond)
		require.NotEmpty(t, o.logs.FilterMessage("handler ignored cancellation past its grace period; it keeps its slot").All())
		require.Equal(t, queue.StateActive, requireState(t, o.q, id, queue.StateActive).State, "its lease is kept")
		close(release)
		requireState(t, o.q, id, queue.StateCanceled)
		require.Eventually(t, func() bool { return rt.Stats().Canceled == 1 }, longWait, 5*time.Millisecond)
		require.Zero(t, rt.Stats().Failed)
	})
}
