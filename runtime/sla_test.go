package runtime_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/overtake/overtake/tracing"
)

// Tests of per-level SLAs (Config.SLA): a task leased after waiting longer
// than its level allows is counted, logged, and marked on its span. The
// queue's clock is a fake shared with the test, so a wait takes no time.

// slaClock is a queue clock that moves only when told.
type slaClock struct{ ms atomic.Int64 }

func newSLAClock() *slaClock {
	c := &slaClock{}
	c.ms.Store(time.Now().UnixMilli())
	return c
}

func (c *slaClock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *slaClock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// slaRun enqueues tasks at the given levels (IDs as keys), lets the clock run
// on by wait, starts a runtime with sla and waits until every task ran.
func slaRun(t *testing.T, b testredis.Backend, qcfg queue.Config, levels map[string]int,
	wait time.Duration, sla map[int]time.Duration) (*testBundle, *runtime.Runtime) {
	t.Helper()
	clk := newSLAClock()
	qcfg.Clock = clk.Now
	o := setupBundle(t, b, withQueue(qcfg), withTracing())
	for id, l := range levels {
		o.enqueue(t, "job", l, queue.ID(id))
	}
	clk.Advance(wait)
	var mu sync.Mutex
	ran := map[string]bool{}
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
		mu.Lock()
		defer mu.Unlock()
		ran[tk.ID] = true
		return nil
	})
	rt := o.start(t, context.Background(), mux, runtime.Config{Concurrency: 4, SLA: sla})
	for id := range levels {
		o.spans(t, "process", id, 1)
	}
	mu.Lock()
	require.Len(t, ran, len(levels))
	mu.Unlock()
	return o, rt
}

func TestSLABreach(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o, rt := slaRun(t, b, queue.Config{}, map[string]int{"late": 1, "ontime": 2, "nosla": 0},
			5*time.Second, map[int]time.Duration{1: 2 * time.Second, 2: 10 * time.Second})

		require.EqualValues(t, 1, rt.Stats().SLABreaches)
		m := o.metrics(t)
		require.EqualValues(t, 1, metricCount(t, m[telemetry.MetricSLABreaches], 1))
		require.Zero(t, metricCount(t, m[telemetry.MetricSLABreaches], 2))
		require.Zero(t, metricCount(t, m[telemetry.MetricSLABreaches], 0))

		ev := spanEvent(t, o.spans(t, "process", "late", 1)[0], telemetry.EventSLABreached)
		require.EqualValues(t, 1, ev[telemetry.LevelKey].AsInt64())
		require.EqualValues(t, 5000, ev[telemetry.WaitMsKey].AsInt64())
		require.EqualValues(t, 2000, ev[telemetry.SLAMsKey].AsInt64())
		for _, id := range []string{"ontime", "nosla"} {
			require.NotContains(t, spanEventNames(o.spans(t, "process", id, 1)[0]), telemetry.EventSLABreached, id)
		}

		logs := o.logs.FilterMessage("task waited longer than its level's SLA").All()
		require.Len(t, logs, 1)
		f := logs[0].ContextMap()
		require.Equal(t, "late", f[tracing.FieldTaskID])
		require.Equal(t, 5*time.Second, f["wait"])
		require.Equal(t, 2*time.Second, f["sla"])
	})
}

// An aged task is held to the SLA of the level it was enqueued at, not of
// the level it reached: its wait includes the time before it aged.
func TestSLAOfOriginalLevel(t *testing.T) {
	qcfg := queue.Config{AgeAfter: time.Second}
	t.Run("within", func(t *testing.T) {
		testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
			o, rt := slaRun(t, b, qcfg, map[string]int{"aged": 0}, 3*time.Second,
				map[int]time.Duration{0: 10 * time.Second, 1: time.Second})
			span := o.spans(t, "process", "aged", 1)[0]
			require.EqualValues(t, 1, attrMap(span.Attributes())[telemetry.LevelKey].AsInt64(), "ran aged one level up")
			require.NotContains(t, spanEventNames(span), telemetry.EventSLABreached)
			require.Zero(t, rt.Stats().SLABreaches)
		})
	})
	t.Run("breached", func(t *testing.T) {
		testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
			o, rt := slaRun(t, b, qcfg, map[string]int{"aged": 0}, 3*time.Second,
				map[int]time.Duration{0: 2 * time.Second, 1: time.Hour})
			ev := spanEvent(t, o.spans(t, "process", "aged", 1)[0], telemetry.EventSLABreached)
			require.EqualValues(t, 0, ev[telemetry.LevelKey].AsInt64())
			require.EqualValues(t, 3000, ev[telemetry.WaitMsKey].AsInt64())
			require.EqualValues(t, 1, rt.Stats().SLABreaches)
			require.EqualValues(t, 1, metricCount(t, o.metrics(t)[telemetry.MetricSLABreaches], 0))
		})
	})
}

func TestSLAValidation(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{Levels: 3})
		mux := handlers.NewMux()
		for name, sla := range map[string]map[int]time.Duration{
			"level above the top": {3: time.Second},
			"negative level":      {-1: time.Second},
			"zero bound":          {1: 0},
			"negative bound":      {2: -time.Second},
		} {
			_, err := runtime.New(q, mux, runtime.Config{SLA: sla})
			require.ErrorIs(t, err, runtime.ErrInvalidConfig, name)
			require.ErrorContains(t, err, "SLA", name)
		}
		_, err := runtime.New(q, mux, runtime.Config{SLA: map[int]time.Duration{3: time.Second}})
		require.ErrorContains(t, err, "levels are 0..2")
		startRuntime(t, q, mux, runtime.Config{SLA: map[int]time.Duration{0: time.Minute, 2: time.Second}})
	})
}
