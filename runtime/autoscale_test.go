package runtime_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Autoscaling by backlog: the concurrency follows the pending tasks within
// [Min, Max], up at once, down one step per interval, never cancelling a
// running task, and the fleet sees each change.

const (
	asInterval = 50 * time.Millisecond
	// asReport bounds how long the fleet record takes to show a change:
	// well under the default heartbeat interval (a third of the 30 s
	// lease), so only the heartbeat sent on the change can meet it.
	asReport = 3 * time.Second
)

// asJobs is a "job" handler that counts the handlers running now and the
// peak, counts cancelled contexts, and blocks until released.
type asJobs struct {
	running, peak, cancelled, done atomic.Int64
	release                        chan struct{}
	once                           sync.Once
}

func newAsJobs(t *testing.T) (*asJobs, *handlers.Mux) {
	j := &asJobs{release: make(chan struct{})}
	t.Cleanup(j.releaseAll) // before the runtime's shutdown
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(ctx context.Context, _ *queue.TaskInfo) error {
		n := j.running.Add(1)
		defer j.running.Add(-1)
		for p := j.peak.Load(); n > p && !j.peak.CompareAndSwap(p, n); p = j.peak.Load() { //nolint:revive // a CAS loop: the condition does the work
		}
		select {
		case <-j.release:
			j.done.Add(1)
			return nil
		case <-ctx.Done():
			j.cancelled.Add(1)
			return context.Cause(ctx)
		}
	})
	return j, mux
}

func (j *asJobs) releaseAll() { j.once.Do(func() { close(j.release) }) }

// fleetCapacity reads the capacity worker reported to the fleet.
func fleetCapacity(t *testing.T, b testredis.Backend, q *queue.Client, worker string) int {
	t.Helper()
	w, ok := fleetWorker(t, q, worker)
	if !ok {
		t.Fatalf("worker %s is not in the fleet", worker)
	}
	return w.Capacity
}

// fleetWorker returns what the fleet knows of worker, and whether it is in
// the fleet at all.
func fleetWorker(t *testing.T, q *queue.Client, worker string) (queue.WorkerInfo, bool) {
	t.Helper()
	ws, err := q.Workers(context.Background())
	require.NoError(t, err)
	for _, w := range ws {
		if w.ID == worker {
			return w, true
		}
	}
	return queue.WorkerInfo{}, false
}

// scaled returns the (old, new) pairs of the "concurrency scaled" log
// entries, in order.
func scaled(t *testing.T, logs *observer.ObservedLogs) [][2]int {
	t.Helper()
	var out [][2]int
	for _, e := range logs.FilterMessage("concurrency scaled").All() {
		m := e.ContextMap()
		require.Contains(t, m, "backlog")
		out = append(out, [2]int{int(m["old"].(int64)), int(m["new"].(int64))})
	}
	return out
}

// A backlog raises the concurrency to Max at once and never above it, and
// the fleet record follows; once the backlog drains the concurrency falls
// back to Min one step per interval.
func TestAutoscaleFollowsBacklog(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		const total, maxC = 10, 4
		q := setup(t, b, queue.Config{})
		jobs, mux := newAsJobs(t)
		for range total {
			enqueue(t, q, "job", "", 0)
		}
		log, logs := observedLogger(t)
		rt := startRuntime(t, q, mux, runtime.Config{Logger: log,
			Autoscale: &runtime.Autoscale{Min: 1, Max: maxC, Interval: asInterval}})
		started := logs.FilterMessage("runtime started").All()
		require.Len(t, started, 1)
		require.EqualValues(t, 1, started[0].ContextMap()["concurrency"], "Concurrency defaults to Min")

		require.Eventually(t, func() bool {
			return rt.Concurrency() == maxC && jobs.running.Load() == maxC
		}, 10*time.Second, 5*time.Millisecond, "scaled up to Max with tasks running")
		// The change is reported to the fleet at once, not at the next
		// heartbeat (10 s by default).
		require.Eventually(t, func() bool { return fleetCapacity(t, b, q, rt.WorkerID()) == maxC },
			asReport, 5*time.Millisecond)
		// Six tasks still wait: over several intervals, neither the
		// concurrency nor the running handlers go past Max.
		require.Never(t, func() bool {
			return rt.Concurrency() > maxC || jobs.running.Load() > maxC
		}, 6*asInterval, 5*time.Millisecond)

		jobs.releaseAll()
		require.Eventually(t, func() bool { return jobs.done.Load() == total }, 10*time.Second, 5*time.Millisecond)
		require.Eventually(t, func() bool { return rt.Concurrency() == 1 }, 10*time.Second, 5*time.Millisecond,
			"scaled back down to Min")
		require.Eventually(t, func() bool { return fleetCapacity(t, b, q, rt.WorkerID()) == 1 },
			asReport, 5*time.Millisecond)

		require.EqualValues(t, maxC, jobs.peak.Load(), "peak of running handlers")
		require.Zero(t, jobs.cancelled.Load())
		st := rt.Stats()
		require.GreaterOrEqual(t, st.ScaledUp, int64(1))
		require.GreaterOrEqual(t, st.ScaledDown, int64(maxC-1), "down one step at a time")
		steps := scaled(t, logs)
		require.Equal(t, [2]int{1, maxC}, steps[0], "up to Max in one step")
		for _, s := range steps {
			require.LessOrEqual(t, s[1], maxC)
			require.GreaterOrEqual(t, s[1], 1)
			require.LessOrEqual(t, s[0]-s[1], 1, "scale-down %v is more than one step", s)
		}
		require.Len(t, steps, int(st.ScaledUp+st.ScaledDown))
	})
}

// Scaling down never goes below the running tasks and cancels none: it
// only stops leasing. A backlog that then builds up raises it again.
func TestAutoscaleDownKeepsRunningTasks(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		jobs, mux := newAsJobs(t)
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 4,
			Autoscale: &runtime.Autoscale{Min: 1, Max: 4, Interval: asInterval}})
		require.Equal(t, 4, rt.Concurrency())
		enqueue(t, q, "job", "", 0)
		enqueue(t, q, "job", "", 0)

		require.Eventually(t, func() bool {
			return jobs.running.Load() == 2 && rt.Concurrency() == 2
		}, 10*time.Second, 5*time.Millisecond, "scaled down to the running tasks")
		require.Eventually(t, func() bool { return fleetCapacity(t, b, q, rt.WorkerID()) == 2 },
			asReport, 5*time.Millisecond)
		require.Never(t, func() bool { return rt.Concurrency() < 2 || jobs.cancelled.Load() > 0 },
			6*asInterval, 5*time.Millisecond, "scaled below the running tasks or cancelled one")

		// No free slot now: a third task waits until the next interval
		// raises the concurrency for it.
		enqueue(t, q, "job", "", 0)
		require.Eventually(t, func() bool {
			return jobs.running.Load() == 3 && rt.Concurrency() == 3
		}, 10*time.Second, 5*time.Millisecond, "scaled up for the backlog")

		jobs.releaseAll()
		// Concurrency 1 says at most one slot is busy, not none: the last
		// run may still be ending.
		require.Eventually(t, func() bool {
			return rt.Concurrency() == 1 && jobs.done.Load() == 3 && rt.Stats().Processed == 3
		}, 10*time.Second, 5*time.Millisecond)
		require.EqualValues(t, 3, jobs.done.Load())
		require.Zero(t, jobs.cancelled.Load())
		st := rt.Stats()
		require.Zero(t, st.Preempted)
		require.EqualValues(t, 3, st.Processed)
	})
}

// The gauge overtake.worker.concurrency follows the concurrency.
func TestAutoscaleConcurrencyGauge(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		o := setupBundle(t, b, withTracing())
		jobs, mux := newAsJobs(t)
		rt := o.start(t, context.Background(), mux, runtime.Config{
			Autoscale: &runtime.Autoscale{Min: 2, Max: 5, Interval: asInterval}})
		gauge := func() int64 {
			g, ok := o.metrics(t)[telemetry.MetricWorkerConcurrency].(metricdata.Gauge[int64])
			require.True(t, ok, "concurrency gauge missing")
			require.Len(t, g.DataPoints, 1)
			q, _ := g.DataPoints[0].Attributes.Value(telemetry.DestinationKey)
			require.Equal(t, o.q.Name(), q.AsString())
			return g.DataPoints[0].Value
		}
		require.EqualValues(t, 2, gauge())
		for range 5 {
			o.enqueue(t, "job", 0)
		}
		require.Eventually(t, func() bool { return rt.Concurrency() == 5 }, 10*time.Second, 5*time.Millisecond)
		require.EqualValues(t, 5, gauge())
		jobs.releaseAll()
	})
}

// Bad bounds are rejected with ErrInvalidConfig; without Autoscale the
// concurrency is fixed.
func TestAutoscaleConfig(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		mux := handlers.NewMux()
		bad := map[string]struct {
			cfg  runtime.Config
			want string
		}{
			"min under 1":          {runtime.Config{Autoscale: &runtime.Autoscale{Min: 0, Max: 3}}, "Autoscale.Min must be at least 1"},
			"max under min":        {runtime.Config{Autoscale: &runtime.Autoscale{Min: 3, Max: 2}}, "Autoscale.Max 2 is under Autoscale.Min 3"},
			"concurrency above":    {runtime.Config{Concurrency: 5, Autoscale: &runtime.Autoscale{Min: 1, Max: 4}}, "Concurrency 5 is outside Autoscale bounds [1, 4]"},
			"concurrency below":    {runtime.Config{Concurrency: 1, Autoscale: &runtime.Autoscale{Min: 2, Max: 4}}, "Concurrency 1 is outside"},
			"default concurrency":  {runtime.Config{Autoscale: &runtime.Autoscale{Min: 20, Max: 10}}, "Autoscale.Max 10 is under"},
			"negative interval":    {runtime.Config{Autoscale: &runtime.Autoscale{Min: 1, Max: 4, Interval: -time.Second}}, "Autoscale.Interval -1s must be positive"},
			"negative target":      {runtime.Config{Autoscale: &runtime.Autoscale{Min: 1, Max: 4, TargetBacklogPerWorker: -1}}, "TargetBacklogPerWorker"},
			"negative scale step":  {runtime.Config{Autoscale: &runtime.Autoscale{Min: 1, Max: 4, ScaleDownStep: -2}}, "ScaleDownStep"},
			"concurrency negative": {runtime.Config{Concurrency: -1, Autoscale: &runtime.Autoscale{Min: 1, Max: 4}}, "Concurrency must be at least 1"},
		}
		for name, c := range bad {
			_, err := runtime.New(q, mux, c.cfg)
			require.ErrorIs(t, err, runtime.ErrInvalidConfig, name)
			require.ErrorContains(t, err, c.want, name)
		}

		a := &runtime.Autoscale{Min: 2, Max: 8}
		for _, c := range []struct {
			cfg  runtime.Config
			want int
		}{
			{runtime.Config{}, 10},
			{runtime.Config{Concurrency: 3}, 3},
			{runtime.Config{Autoscale: a}, 2},
			{runtime.Config{Concurrency: 8, Autoscale: a}, 8},
		} {
			rt := startRuntime(t, q, mux, c.cfg)
			require.Equal(t, c.want, rt.Concurrency())
			require.Equal(t, c.want, fleetCapacity(t, b, q, rt.WorkerID()))
			require.NoError(t, rt.Shutdown(context.Background()))
			require.Zero(t, rt.Stats().ScaledUp+rt.Stats().ScaledDown)
		}
		require.Equal(t, runtime.Autoscale{Min: 2, Max: 8}, *a, "New left the caller's Autoscale alone")
	})
}
