package runtime_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// "Processed" and "failed" mean the same in RunStats, the fleet's rates
// and the OpenTelemetry counters: a run that ended in success or failure
// is processed; a failed one (retried or dead-lettered, however it got
// there: retries exhausted, SkipRetry, no handler, a malformed payload) is
// failed too. One success and four dead letters count 5 processed, 4
// failed, 4 dead everywhere.
func TestOutcomeCountsAgree(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		var offset atomic.Int64 // the queue's clock runs ahead by this
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		o := setupBundle(t, b, withQueue(queue.Config{Clock: clock}), withTracing())
		ctx := context.Background()
		mux := handlers.NewMux()
		mux.HandleFunc("ok", func(context.Context, *queue.TaskInfo) error { return nil })
		mux.HandleFunc("bad", func(context.Context, *queue.TaskInfo) error { return errors.New("no") })
		mux.HandleFunc("hopeless", func(context.Context, *queue.TaskInfo) error {
			return handlers.SkipRetry(errors.New("bad input"))
		})
		handlers.HandleJSON(mux, "typed", func(context.Context, *queue.TaskInfo, struct{ N int }) error { return nil })
		rt := o.start(t, ctx, mux, runtime.Config{Concurrency: 2})
		o.enqueue(t, "ok", 0)
		o.enqueue(t, "bad", 0, queue.MaxRetries(0)) // retries exhausted
		o.enqueue(t, "hopeless", 0)                 // SkipRetry
		o.enqueue(t, "nobody-handles-this", 0)      // no handler
		_, err := o.q.Enqueue(ctx, queue.NewTask("typed", []byte("{not json")), queue.Level(0))
		require.NoError(t, err)

		require.Eventually(t, func() bool {
			st := rt.Stats()
			return st.Dead == 4 && st.Processed == 5 && st.Failed == 4
		}, 10*time.Second, 5*time.Millisecond, "stats %+v", rt.Stats())
		st := rt.Stats()
		require.Equal(t, [3]int64{5, 4, 4}, [3]int64{st.Processed, st.Failed, st.Dead}, "RunStats %+v", st)

		// The metrics are recorded as each run's span ends, after RunStats counts it.
		require.Eventually(t, func() bool {
			m := o.metrics(t)
			metrics := [3]int64{metricCount(t, m[telemetry.MetricProcessed], 0), metricCount(t, m[telemetry.MetricFailed], 0),
				metricCount(t, m[telemetry.MetricDead], 0)}
			return metrics == [3]int64{5, 4, 4}
		}, 10*time.Second, 5*time.Millisecond, "metrics (processed, failed, dead) never 5, 4, 4")

		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(sctx)) // reports what no heartbeat did yet
		offset.Store(int64(20 * time.Second)) // the buckets written are complete
		qs, err := o.q.Stats(ctx)
		require.NoError(t, err)
		window := queue.RateWindow.Seconds()
		require.Equal(t, queue.Rates{Processed: 5 / window, Failed: 4 / window}, qs.Levels[0].Rates, "the fleet's rates")
	})
}
