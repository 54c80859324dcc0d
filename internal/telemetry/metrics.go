package telemetry

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metric names; units and attributes are listed in the package doc.
const (
	// MetricWaitDuration is the histogram of wait before lease, in s.
	MetricWaitDuration = "overtake.task.wait.duration"
	// MetricRunDuration is the histogram of handler run time, in s.
	MetricRunDuration = "overtake.task.run.duration"
	// MetricProcessed counts runs that ended in success or failure.
	MetricProcessed = "overtake.task.processed"
	// MetricFailed counts runs that failed.
	MetricFailed = "overtake.task.failed"
	// MetricDead counts dead-lettered tasks.
	MetricDead = "overtake.task.dead"
	// MetricCanceled counts tasks whose run ended canceled
	// (queue.Client.Cancel).
	MetricCanceled = "overtake.task.canceled"
	// MetricPreempted counts runs that gave way to more urgent work.
	MetricPreempted = "overtake.task.preempted"
	// MetricRetried counts failed tasks scheduled for a retry.
	MetricRetried = "overtake.task.retried"
	// MetricRequeued counts tasks put back at the head of their level.
	MetricRequeued = "overtake.task.requeued"
	// MetricCheckpointSize is the histogram of checkpoint sizes, in By.
	MetricCheckpointSize = "overtake.checkpoint.size"
	// MetricCheckpointMissed counts preempted runs that returned with no
	// checkpoint saved during the run: the next run starts over (from
	// the task's earlier checkpoint, if any). It carries overtake.task.type.
	MetricCheckpointMissed = "overtake.checkpoint.missed"
	// MetricSLABreaches counts tasks that waited longer than their SLA.
	MetricSLABreaches = "overtake.sla.breaches"
	// MetricQueueDepth is the gauge of pending tasks per level.
	MetricQueueDepth = "overtake.queue.depth"
	// MetricWorkerConcurrency is the gauge of tasks a worker runs at once
	// (its slots; it moves with autoscaling).
	MetricWorkerConcurrency = "overtake.worker.concurrency"
)

// Histogram bucket boundaries: durations in seconds from 5 ms to an hour,
// checkpoint sizes in bytes from 64 B to 16 MiB.
var (
	durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	sizeBuckets     = []float64{64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20}
)

// Labels identifies the per-level series a measurement belongs to. It
// becomes messaging.destination.name, overtake.level and
// overtake.level.name (the level number when LevelName is empty).
type Labels struct {
	// Queue is the queue name.
	Queue string
	// Level is the priority level.
	Level int
	// LevelName is the level's configured name, if any.
	LevelName string
}

// RunResult is how one run of a handler ended.
type RunResult int

// The outcomes of a run.
const (
	// RunSucceeded means the handler returned nil; counts as processed.
	RunSucceeded RunResult = iota
	// RunFailed means the handler failed; counts as processed and failed.
	RunFailed
	// RunPreempted means the task gave way; counts as preempted only.
	RunPreempted
	// RunCanceled means the run ended canceled; counts as canceled only.
	RunCanceled
)

// String returns "succeeded", "failed", "preempted" or "canceled".
func (o RunResult) String() string {
	switch o {
	case RunSucceeded:
		return "succeeded"
	case RunFailed:
		return "failed"
	case RunPreempted:
		return "preempted"
	case RunCanceled:
		return "canceled"
	}
	return "unknown"
}

// Metrics records Overtake's instruments. Create it once per meter provider
// with [NewMetrics]. A nil *Metrics records nothing, so callers need no
// checks when metrics are off.
type Metrics struct {
	meter                                                 metric.Meter
	wait, run                                             metric.Float64Histogram
	ckpt                                                  metric.Int64Histogram
	processed, failed, dead, preempted, retried, requeued metric.Int64Counter
	canceled                                              metric.Int64Counter
	slaBreaches, ckptMissed                               metric.Int64Counter
	depth, concurrency                                    metric.Int64ObservableGauge
	sets                                                  sync.Map // Labels -> *series
	runSets                                               sync.Map // runKey -> *series
	typeSets                                              sync.Map // typeKey -> *series
}

// series is a cached attribute set with its measurement options, built
// once: a metric.WithAttributeSet per measurement boxed the set and the
// call made a slice of it, two allocations a measurement (six a run).
// The option slices are shared and never changed.
type series struct {
	set attribute.Set
	add []metric.AddOption
	rec []metric.RecordOption
	obs []metric.ObserveOption
}

func newSeries(s attribute.Set) *series {
	o := metric.WithAttributeSet(s)
	return &series{set: s, add: []metric.AddOption{o}, rec: []metric.RecordOption{o}, obs: []metric.ObserveOption{o}}
}

// runKey selects the cached attribute set of a run: labels and outcome.
type runKey struct {
	l Labels
	o RunResult
}

// typeKey selects the cached attribute set of labels and a task type.
type typeKey struct {
	l   Labels
	typ string
}

// NewMetrics creates the instruments on mp's meter [InstrumentationName].
// A nil mp gives instruments that record nothing.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := &Metrics{meter: mp.Meter(InstrumentationName, metric.WithSchemaURL(SchemaURL))}
	var errs [14]error
	m.wait, errs[0] = m.meter.Float64Histogram(MetricWaitDuration, metric.WithUnit("s"),
		metric.WithDescription("Time a task waited in its level before a worker leased it."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	m.run, errs[1] = m.meter.Float64Histogram(MetricRunDuration, metric.WithUnit("s"),
		metric.WithDescription("Time one run of a handler took, by outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	m.ckpt, errs[2] = m.meter.Int64Histogram(MetricCheckpointSize, metric.WithUnit("By"),
		metric.WithDescription("Size of saved checkpoints."),
		metric.WithExplicitBucketBoundaries(sizeBuckets...))
	counter := func(name, desc string, err *error) metric.Int64Counter {
		c, e := m.meter.Int64Counter(name, metric.WithUnit("{task}"), metric.WithDescription(desc))
		*err = e
		return c
	}
	m.processed = counter(MetricProcessed, "Runs that ended in success or failure.", &errs[3])
	m.failed = counter(MetricFailed, "Runs that failed.", &errs[4])
	m.dead = counter(MetricDead, "Tasks dead-lettered.", &errs[5])
	m.preempted = counter(MetricPreempted, "Runs that gave way to more urgent work.", &errs[6])
	m.retried = counter(MetricRetried, "Failed tasks scheduled for a retry.", &errs[7])
	m.requeued = counter(MetricRequeued, "Tasks put back at the head of their level.", &errs[8])
	m.slaBreaches = counter(MetricSLABreaches, "Tasks that waited longer than their level's SLA.", &errs[9])
	m.depth, errs[10] = m.meter.Int64ObservableGauge(MetricQueueDepth, metric.WithUnit("{task}"),
		metric.WithDescription("Pending tasks per level."))
	m.concurrency, errs[11] = m.meter.Int64ObservableGauge(MetricWorkerConcurrency, metric.WithUnit("{slot}"),
		metric.WithDescription("Tasks the worker runs at once (its slots), as set or autoscaled."))
	m.ckptMissed = counter(MetricCheckpointMissed,
		"Preempted runs that returned with no checkpoint saved during the run: the next run starts over.", &errs[12])
	m.canceled = counter(MetricCanceled, "Tasks whose run ended canceled.", &errs[13])
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return m, nil
}

// set returns the cached series of l.
func (m *Metrics) set(l Labels) *series {
	if s, ok := m.sets.Load(l); ok {
		return s.(*series)
	}
	name := l.LevelName
	if name == "" {
		name = strconv.Itoa(l.Level)
	}
	s := newSeries(attribute.NewSet(DestinationKey.String(l.Queue), LevelKey.Int(l.Level), LevelNameKey.String(name)))
	m.sets.Store(l, s)
	return s
}

// runSet returns the cached series of l plus the outcome o.
func (m *Metrics) runSet(l Labels, o RunResult, base *series) *series {
	k := runKey{l, o}
	if s, ok := m.runSets.Load(k); ok {
		return s.(*series)
	}
	s := newSeries(attribute.NewSet(append(base.set.ToSlice(), OutcomeKey.String(o.String()))...))
	m.runSets.Store(k, s)
	return s
}

func (m *Metrics) add(ctx context.Context, c metric.Int64Counter, l Labels) {
	c.Add(ctx, 1, m.set(l).add...)
}

// RecordWait records how long a task waited before it was leased.
func (m *Metrics) RecordWait(ctx context.Context, l Labels, wait time.Duration) {
	if m != nil {
		m.wait.Record(ctx, wait.Seconds(), m.set(l).rec...)
	}
}

// RecordRun records one run of a handler: its duration (with
// overtake.outcome) and the processed, failed, preempted or canceled
// counter.
func (m *Metrics) RecordRun(ctx context.Context, l Labels, run time.Duration, o RunResult) {
	if m == nil {
		return
	}
	s := m.set(l)
	m.run.Record(ctx, run.Seconds(), m.runSet(l, o, s).rec...)
	switch o {
	case RunSucceeded:
		m.processed.Add(ctx, 1, s.add...)
	case RunFailed:
		m.processed.Add(ctx, 1, s.add...)
		m.failed.Add(ctx, 1, s.add...)
	case RunPreempted:
		m.preempted.Add(ctx, 1, s.add...)
	case RunCanceled:
		m.canceled.Add(ctx, 1, s.add...)
	}
}

// RecordRetried counts a failed task scheduled for a retry.
func (m *Metrics) RecordRetried(ctx context.Context, l Labels) {
	if m != nil {
		m.add(ctx, m.retried, l)
	}
}

// RecordRequeued counts a task put back at the head of its level.
func (m *Metrics) RecordRequeued(ctx context.Context, l Labels) {
	if m != nil {
		m.add(ctx, m.requeued, l)
	}
}

// RecordDead counts a dead-lettered task.
func (m *Metrics) RecordDead(ctx context.Context, l Labels) {
	if m != nil {
		m.add(ctx, m.dead, l)
	}
}

// RecordSLABreach counts a task that waited longer than its level's SLA.
func (m *Metrics) RecordSLABreach(ctx context.Context, l Labels) {
	if m != nil {
		m.add(ctx, m.slaBreaches, l)
	}
}

// RecordCheckpoint records the size in bytes of a saved checkpoint.
func (m *Metrics) RecordCheckpoint(ctx context.Context, l Labels, size int) {
	if m != nil {
		m.ckpt.Record(ctx, int64(size), m.set(l).rec...)
	}
}

// RecordCheckpointMissed counts a preempted run of a task of type typ
// that returned with no checkpoint saved during the run.
func (m *Metrics) RecordCheckpointMissed(ctx context.Context, l Labels, typ string) {
	if m == nil {
		return
	}
	k := typeKey{l, typ}
	s, ok := m.typeSets.Load(k)
	if !ok {
		s = newSeries(attribute.NewSet(append(m.set(l).set.ToSlice(), TaskTypeKey.String(typ))...))
		m.typeSets.Store(k, s)
	}
	m.ckptMissed.Add(ctx, 1, s.(*series).add...)
}

// RegisterDepth reports the pending tasks of queue per level as the gauge
// overtake.queue.depth, reading depth at each collection. levelName names
// a level (nil: its number). Call unregister when the queue is closed.
func (m *Metrics) RegisterDepth(depth func(context.Context) (map[int]int64, error), levelName func(int) string, queue string) (unregister func() error, err error) {
	if m == nil {
		return func() error { return nil }, nil
	}
	reg, err := m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		d, err := depth(ctx)
		if err != nil {
			return err
		}
		for level, n := range d {
			l := Labels{Queue: queue, Level: level}
			if levelName != nil {
				l.LevelName = levelName(level)
			}
			o.ObserveInt64(m.depth, n, m.set(l).obs...)
		}
		return nil
	}, m.depth)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// RegisterConcurrency reports the worker's slots as the gauge
// overtake.worker.concurrency (attribute messaging.destination.name =
// queue), reading concurrency at each collection; it costs no Redis call.
// Call unregister when the worker stops.
func (m *Metrics) RegisterConcurrency(concurrency func() int64, queue string) (unregister func() error, err error) {
	if m == nil {
		return func() error { return nil }, nil
	}
	set := attribute.NewSet(DestinationKey.String(queue))
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(m.concurrency, concurrency(), metric.WithAttributeSet(set))
		return nil
	}, m.concurrency)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
