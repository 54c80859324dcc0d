package telemetry

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func TestMetricNamesAndUnits(t *testing.T) {
	t.Parallel()
	m, r := newManualMetrics(t)
	ctx := context.Background()
	l := Labels{Queue: "q", Level: 1, LevelName: "normal"}
	m.RecordWait(ctx, l, time.Second)
	m.RecordRun(ctx, l, time.Second, RunSucceeded)
	m.RecordRun(ctx, l, time.Second, RunFailed)
	m.RecordRun(ctx, l, time.Second, RunPreempted)
	m.RecordRetried(ctx, l)
	m.RecordRequeued(ctx, l)
	m.RecordDead(ctx, l)
	m.RecordSLABreach(ctx, l)
	m.RecordCheckpoint(ctx, l, 2048)
	m.RecordCheckpointMissed(ctx, l, "report")
	unregister, err := m.RegisterDepth(func(context.Context) (map[int]int64, error) {
		return map[int]int64{0: 5}, nil
	}, nil, "q")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unregister() }()
	unregisterCc, err := m.RegisterConcurrency(func() int64 { return 4 }, "q")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unregisterCc() }()

	want := map[string]string{
		MetricWaitDuration: "s", MetricRunDuration: "s", MetricCheckpointSize: "By",
		MetricProcessed: "{task}", MetricFailed: "{task}", MetricDead: "{task}",
		MetricPreempted: "{task}", MetricRetried: "{task}", MetricRequeued: "{task}",
		MetricSLABreaches: "{task}", MetricQueueDepth: "{task}", MetricWorkerConcurrency: "{slot}",
		MetricCheckpointMissed: "{task}",
	}
	got := collect(t, r)
	if len(got) != len(want) {
		t.Errorf("got %d metrics, want %d", len(got), len(want))
	}
	for name, unit := range want {
		if g, ok := got[name]; !ok || g.Unit != unit || g.Description == "" {
			t.Errorf("%s: present %v unit %q description %q, want unit %q", name, ok, g.Unit, g.Description, unit)
		}
	}
}

// sums returns the value of every data point of a counter, keyed by level.
func sums(t *testing.T, m metricdata.Metrics) map[int64]int64 {
	t.Helper()
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is %T, want Sum[int64]", m.Name, m.Data)
	}
	out := map[int64]int64{}
	for _, dp := range s.DataPoints {
		v, _ := dp.Attributes.Value(LevelKey)
		out[v.AsInt64()] += dp.Value
	}
	return out
}

func TestRecordRunOutcomes(t *testing.T) {
	t.Parallel()
	m, r := newManualMetrics(t)
	ctx := context.Background()
	hi, lo := Labels{Queue: "q", Level: 2, LevelName: "high"}, Labels{Queue: "q", Level: 0}
	m.RecordRun(ctx, hi, 10*time.Millisecond, RunSucceeded)
	m.RecordRun(ctx, hi, 20*time.Millisecond, RunFailed)
	m.RecordRun(ctx, lo, 3*time.Second, RunPreempted)
	m.RecordRun(ctx, lo, time.Second, RunSucceeded)

	got := collect(t, r)
	check := func(name string, want map[int64]int64) {
		t.Helper()
		g := sums(t, got[name])
		for lvl, n := range want {
			if g[lvl] != n {
				t.Errorf("%s level %d = %d, want %d", name, lvl, g[lvl], n)
			}
		}
	}
	check(MetricProcessed, map[int64]int64{2: 2, 0: 1})
	check(MetricFailed, map[int64]int64{2: 1, 0: 0})
	check(MetricPreempted, map[int64]int64{2: 0, 0: 1})

	h := got[MetricRunDuration].Data.(metricdata.Histogram[float64])
	outcomes := map[string]uint64{}
	for _, dp := range h.DataPoints {
		o, _ := dp.Attributes.Value(OutcomeKey)
		outcomes[o.AsString()] += dp.Count
		if dp.Bounds[0] != 0.005 {
			t.Errorf("run buckets start at %v, want 0.005 s", dp.Bounds[0])
		}
	}
	if outcomes["succeeded"] != 2 || outcomes["failed"] != 1 || outcomes["preempted"] != 1 {
		t.Errorf("run outcomes = %v", outcomes)
	}

	// Level names: the given one, else the level number.
	s := got[MetricProcessed].Data.(metricdata.Sum[int64])
	names := map[string]bool{}
	for _, dp := range s.DataPoints {
		n, _ := dp.Attributes.Value(LevelNameKey)
		q, _ := dp.Attributes.Value(DestinationKey)
		names[n.AsString()] = q.AsString() == "q"
	}
	if !names["high"] || !names["0"] {
		t.Errorf("level names = %v, want high and 0 with queue q", names)
	}
}

func TestWaitAndCheckpointHistograms(t *testing.T) {
	t.Parallel()
	m, r := newManualMetrics(t)
	l := Labels{Queue: "q", Level: 1}
	m.RecordWait(context.Background(), l, 1500*time.Millisecond)
	m.RecordCheckpoint(context.Background(), l, 4096)
	got := collect(t, r)
	w := got[MetricWaitDuration].Data.(metricdata.Histogram[float64]).DataPoints[0]
	if w.Sum != 1.5 || w.Count != 1 {
		t.Errorf("wait sum %v count %d, want 1.5 s once", w.Sum, w.Count)
	}
	c := got[MetricCheckpointSize].Data.(metricdata.Histogram[int64]).DataPoints[0]
	if c.Sum != 4096 {
		t.Errorf("checkpoint sum %d, want 4096", c.Sum)
	}
}

func TestRegisterDepth(t *testing.T) {
	t.Parallel()
	m, r := newManualMetrics(t)
	depth := map[int]int64{0: 7, 2: 1}
	unregister, err := m.RegisterDepth(func(context.Context) (map[int]int64, error) { return depth, nil },
		func(l int) string { return [...]string{"low", "normal", "high"}[l] }, "q")
	if err != nil {
		t.Fatal(err)
	}
	g := collect(t, r)[MetricQueueDepth].Data.(metricdata.Gauge[int64])
	got := map[string]int64{}
	for _, dp := range g.DataPoints {
		n, _ := dp.Attributes.Value(LevelNameKey)
		got[n.AsString()] = dp.Value
	}
	if got["low"] != 7 || got["high"] != 1 || len(got) != 2 {
		t.Errorf("depth = %v, want low 7 high 1", got)
	}
	if err := unregister(); err != nil {
		t.Fatal(err)
	}
	if _, ok := collect(t, r)[MetricQueueDepth]; ok {
		t.Error("depth still reported after unregister")
	}
}

func TestRegisterConcurrency(t *testing.T) {
	t.Parallel()
	m, r := newManualMetrics(t)
	var n atomic.Int64
	n.Store(3)
	unregister, err := m.RegisterConcurrency(n.Load, "q")
	if err != nil {
		t.Fatal(err)
	}
	value := func() int64 {
		g := collect(t, r)[MetricWorkerConcurrency].Data.(metricdata.Gauge[int64])
		if len(g.DataPoints) != 1 {
			t.Fatalf("%d data points, want 1", len(g.DataPoints))
		}
		dp := g.DataPoints[0]
		if q, _ := dp.Attributes.Value(DestinationKey); q.AsString() != "q" || dp.Attributes.Len() != 1 {
			t.Errorf("attributes = %v, want only %s=q", dp.Attributes.ToSlice(), DestinationKey)
		}
		return dp.Value
	}
	if got := value(); got != 3 {
		t.Errorf("concurrency = %d, want 3", got)
	}
	n.Store(7)
	if got := value(); got != 7 {
		t.Errorf("concurrency = %d after a change, want 7", got)
	}
	if err := unregister(); err != nil {
		t.Fatal(err)
	}
	if _, ok := collect(t, r)[MetricWorkerConcurrency]; ok {
		t.Error("concurrency still reported after unregister")
	}
}

// A failing depth callback surfaces its error to the reader (the SDK
// hands it to the otel error handler on periodic collection).
func TestRegisterDepthError(t *testing.T) {
	t.Parallel()
	m, r := newManualMetrics(t)
	boom := errors.New("redis down")
	unregister, err := m.RegisterDepth(func(context.Context) (map[int]int64, error) {
		return nil, boom
	}, nil, "q")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unregister() }()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); !errors.Is(err, boom) {
		t.Errorf("Collect error = %v, want %v", err, boom)
	}
}

func TestNilMetricsIsNoop(t *testing.T) {
	t.Parallel()
	var m *Metrics
	ctx, l := context.Background(), Labels{}
	m.RecordWait(ctx, l, time.Second)
	m.RecordRun(ctx, l, time.Second, RunFailed)
	m.RecordRetried(ctx, l)
	m.RecordRequeued(ctx, l)
	m.RecordDead(ctx, l)
	m.RecordSLABreach(ctx, l)
	m.RecordCheckpoint(ctx, l, 1)
	unregister, err := m.RegisterDepth(nil, nil, "q")
	if err != nil || unregister() != nil {
		t.Errorf("nil RegisterDepth: %v", err)
	}
	unregister, err = m.RegisterConcurrency(nil, "q")
	if err != nil || unregister() != nil {
		t.Errorf("nil RegisterConcurrency: %v", err)
	}
	noop, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	noop.RecordRun(ctx, l, time.Second, RunSucceeded)
}

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	for o, want := range map[RunResult]string{RunSucceeded: "succeeded", RunFailed: "failed", RunPreempted: "preempted", 9: "unknown"} {
		if o.String() != want {
			t.Errorf("%d = %q, want %q", o, o.String(), want)
		}
	}
}

// A run's measurements allocate nothing of their own on a no-op meter:
// each metric.WithAttributeSet and its option slice cost two allocations
// a measurement (six a run) before the series cached them.
func TestRecordAllocs(t *testing.T) {
	m, err := NewMetrics(noop.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l := Labels{Queue: "q", Level: 1, LevelName: "normal"}
	m.RecordRun(ctx, l, time.Second, RunSucceeded) // fills the caches
	if n := testing.AllocsPerRun(100, func() {
		m.RecordWait(ctx, l, time.Second)
		m.RecordRun(ctx, l, time.Second, RunSucceeded)
		m.RecordDead(ctx, l)
	}); n != 0 {
		t.Fatalf("a wait, a run and a dead-letter allocated %v times", n)
	}
}
