package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// demoOptions are the flags of the demo command.
type demoOptions struct {
	Duration     time.Duration // about how long the demo runs
	Load         int           // quick tasks per level in part 1
	Concurrency  int           // workers of the runtime
	Seed         uint64        // task order, durations and IDs
	OTLP         string        // collector host:port, "env", or "" for none
	OTLPProtocol string        // grpc or http
	OTLPMetrics  bool          // also export metrics (Jaeger takes traces only)
	Jaeger       string        // base URL of the Jaeger UI, "" to look for one
	Verbose      bool          // runtime logs on stderr
}

// Task types of the demo, by part.
var quickTypes = []string{"reindex", "email", "payment"} // low, normal, high

const (
	typeReport = "report" // part 2: long, low, checkpoints
	typeExport = "export" // part 2: keeps the other workers busy
	typeAlert  = "alert"  // part 2: urgent
	cueStep    = 4        // the report's step at which the alert arrives
)

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", "[flags]", stderr)
	var o demoOptions
	fs.DurationVar(&o.Duration, "duration", 5*time.Second, "about how long the demo runs (1s..5m)")
	fs.IntVar(&o.Load, "load", 3, "quick tasks per level in part 1 (1..100)")
	fs.IntVar(&o.Concurrency, "concurrency", 2, "workers of the runtime (1..32)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the enqueue order, task durations and IDs")
	fs.StringVar(&o.OTLP, "otlp", "", "send traces to this OTLP collector host:port "+
		"(e.g. 127.0.0.1:4317), or \"env\" for the OTEL_EXPORTER_OTLP_* variables")
	fs.StringVar(&o.OTLPProtocol, "otlp-protocol", "grpc", "OTLP protocol: grpc or http")
	fs.BoolVar(&o.OTLPMetrics, "otlp-metrics", false, "with --otlp, also export metrics (a collector must accept them; Jaeger does not)")
	fs.StringVar(&o.Jaeger, "jaeger", os.Getenv(envJaegerQuery), "with --otlp, the Jaeger UI's base URL, to print links "+
		"to the traces (default $"+envJaegerQuery+", else port 16686 of the --otlp host if a Jaeger answers there)")
	fs.BoolVar(&o.Verbose, "verbose", false, "also print the runtime's logs on stderr")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageErr("unexpected argument %q", pos[0])
	case o.Duration < time.Second || o.Duration > 5*time.Minute:
		return usageErr("--duration %v is outside 1s..5m", o.Duration)
	case o.Load < 1 || o.Load > 100:
		return usageErr("--load %d is outside 1..100", o.Load)
	case o.Concurrency < 1 || o.Concurrency > 32:
		return usageErr("--concurrency %d is outside 1..32", o.Concurrency)
	case o.OTLPProtocol != "grpc" && o.OTLPProtocol != "http":
		return usageErr("--otlp-protocol %q: want grpc or http", o.OTLPProtocol)
	}
	return runDemo(ctx, o, stdout, stderr)
}

// demo is one run of the demo: an embedded Redis, a runtime, a producer.
type demo struct {
	opts  demoOptions
	p     *printer
	q     *queue.Client
	rt    *runtime.Runtime
	tr    trace.Tracer
	rng   *rand.Rand
	quick time.Duration // run time of a part 1 task
	step  time.Duration // step of a part 2 task

	finished chan string // type of every task done
	cue      chan string // the report reached cueStep
	taken    *takenPrinter
	traces   []partTrace // the root span of each part

	mu          sync.Mutex
	tally       []levelTally
	preemptions int
	resumes     int
	checkpoints int
	urgentID    string
	urgentWait  time.Duration
}

// runDemo runs the demo, writing to out; it returns once the runtime, the
// telemetry and the embedded Redis are stopped.
func runDemo(ctx context.Context, o demoOptions, out, errOut io.Writer) (err error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return fmt.Errorf("start embedded Redis: %w", err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer func() { _ = rdb.Close() }()
	q, err := queue.New(rdb, queue.Config{Namespace: "overtake-demo", Name: "demo"})
	if err != nil {
		return err
	}
	p := &printer{w: out, start: time.Now(), names: q.Config().LevelNames}
	tel, err := newTelemetry(ctx, o, p, errOut)
	if err != nil {
		return err
	}
	defer func() { _ = tel.shutdown() }() // after a failure; success checks it below
	// go-redis's own lines go to the demo's logger too, not to stderr.
	redis.SetLogger(runtime.RedisLogger(tel.log))

	total := 3*o.Load + o.Concurrency + 1
	rounds := (3*o.Load + o.Concurrency - 1) / o.Concurrency
	d := &demo{
		opts: o, p: p, q: q, tr: telemetry.Tracer(tel.tp),
		rng:      rand.New(rand.NewPCG(o.Seed, 0x6f76657274616b65)),
		quick:    max(o.Duration*3/10/time.Duration(rounds), 5*time.Millisecond),
		step:     max(o.Duration/20, 10*time.Millisecond),
		finished: make(chan string, total),
		cue:      make(chan string, 1),
		taken:    tel.taken,
		tally:    make([]levelTally, q.Levels()),
	}
	mux := handlers.NewMux()
	for _, typ := range append([]string{typeReport, typeExport, typeAlert}, quickTypes...) {
		handlers.HandleJSON(mux, typ, d.process)
	}
	d.rt, err = runtime.New(q, mux, runtime.Config{
		WorkerID: tel.instanceID, Concurrency: o.Concurrency, PollInterval: 200 * time.Millisecond, GracePeriod: 2 * time.Second,
		ShutdownTimeout: 5 * time.Second, TracerProvider: tel.tp, MeterProvider: tel.mp, Logger: tel.log,
	})
	if err != nil {
		return err
	}

	p.text("Overtake demo: embedded Redis on %s, queue %q with levels %s,\n",
		m.Addr(), q.Name(), p.levels([]int{0, 1, 2}, " < "))
	p.text("one runtime with %d workers, seed %d. Times are since the start; task IDs are shortened.\n", o.Concurrency, o.Seed)
	dctx, cancel := context.WithTimeout(ctx, 3*o.Duration+10*time.Second)
	defer cancel()
	if err := d.part(dctx, "demo: priority order", d.partOrder); err != nil {
		return d.abort(err)
	}
	if err := d.part(dctx, "demo: preemption", d.partPreempt); err != nil {
		return d.abort(err)
	}
	if err := d.stopRuntime(); err != nil {
		return err
	}
	d.summary()
	if err := tel.shutdown(); err != nil {
		return err
	}
	if o.OTLP != "" {
		what := "traces"
		if o.OTLPMetrics {
			what = "traces and metrics"
		}
		p.text("  %s sent to %s over %s, service name overtake-demo\n", what, tel.target, o.OTLPProtocol)
		d.printTraces(ctx, tel.target)
	}
	return nil
}

// partOrder enqueues quick tasks of every level in mixed order before the
// runtime starts, then starts it: they are taken highest level first.
func (d *demo) partOrder(ctx context.Context) error {
	n := 3 * d.opts.Load
	d.p.text("\n== 1. Priority order: %d quick tasks enqueued in mixed order, taken most urgent first\n", n)
	levels := make([]int, 0, n)
	for l := range 3 {
		for range d.opts.Load {
			levels = append(levels, l)
		}
	}
	d.rng.Shuffle(len(levels), func(i, j int) { levels[i], levels[j] = levels[j], levels[i] })
	for _, l := range levels {
		ms := (d.quick * time.Duration(75+d.rng.IntN(51)) / 100).Milliseconds()
		if _, err := d.enqueue(ctx, quickTypes[l], l, demoArgs{Steps: 1, StepMs: ms}); err != nil {
			return err
		}
	}
	d.p.note("producer", "enqueued %d tasks: %s", n, d.p.levels(levels, " "))
	if err := d.rt.Start(ctx); err != nil {
		return err
	}
	d.p.note("runtime", "started with %d workers", d.opts.Concurrency)
	if err := d.await(ctx, n, "the quick tasks"); err != nil {
		return err
	}
	// A handler signals before it returns: part 2's normal tasks must find
	// every slot free, or they would preempt a quick low task still ending.
	return d.idle(ctx)
}

// idle waits until no slot of the runtime is busy.
func (d *demo) idle(ctx context.Context) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		busy := 0
		for _, p := range d.rt.PoolStats() {
			busy += p.Busy
		}
		if busy == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %d busy slots to free: %w", busy, context.Cause(ctx))
		}
	}
}

// partPreempt runs a long low-priority task that checkpoints after every
// step while the other workers are busy; when it reaches 40% an urgent
// task arrives and preempts it; it resumes from its checkpoint later.
func (d *demo) partPreempt(ctx context.Context) error {
	c := d.opts.Concurrency
	d.p.text("\n== 2. Preemption: a long low task checkpoints; an urgent task arrives while all %d workers are busy\n", c)
	for range c - 1 {
		id, err := d.enqueue(ctx, typeExport, 1, demoArgs{Steps: cueStep + 2, StepMs: d.step.Milliseconds()})
		if err != nil {
			return err
		}
		d.p.note("producer", "enqueued %s %s (normal) to keep a worker busy", typeExport, short(id))
	}
	id, err := d.enqueue(ctx, typeReport, 0, demoArgs{Steps: 10, StepMs: d.step.Milliseconds(), Checkpoint: true, Cue: cueStep})
	if err != nil {
		return err
	}
	d.p.note("producer", "enqueued %s %s (low): 10 steps, a checkpoint after each", typeReport, short(id))
	select {
	case <-d.cue:
	case <-ctx.Done():
		return fmt.Errorf("timed out waiting for the report to reach %d%%: %w", 10*cueStep, context.Cause(ctx))
	}
	d.mu.Lock()
	d.urgentID = d.newID()
	d.mu.Unlock()
	d.p.note("producer", "%s is at %d%% and every worker is busy: enqueue urgent %s %s (high)",
		short(id), 10*cueStep, typeAlert, short(d.urgentID))
	if _, err := d.enqueueID(ctx, d.urgentID, typeAlert, 2, demoArgs{Steps: 2, StepMs: d.step.Milliseconds()}); err != nil {
		return err
	}
	return d.await(ctx, c+1, "the preemption part")
}

// enqueue enqueues a task under a producer span whose context travels in
// the task's headers.
func (d *demo) enqueue(ctx context.Context, typ string, level int, a demoArgs) (string, error) {
	return d.enqueueID(ctx, d.newID(), typ, level, a)
}

func (d *demo) enqueueID(ctx context.Context, id, typ string, level int, a demoArgs) (string, error) {
	payload, err := json.Marshal(a)
	if err != nil {
		return "", err
	}
	ctx, span := telemetry.StartEnqueue(ctx, d.tr, telemetry.TaskInfo{Queue: d.q.Name(), ID: id, Type: typ,
		Level: level, LevelName: d.q.LevelName(level)})
	defer span.End()
	t := queue.NewTask(typ, payload, queue.Headers(telemetry.Inject(ctx, nil)))
	if _, err := d.q.Enqueue(ctx, t, queue.Level(level), queue.ID(id)); err != nil {
		return "", err
	}
	return id, nil
}

// newID returns a task ID from the seeded generator, so that a seed gives
// the same IDs every run.
func (d *demo) newID() string { return fmt.Sprintf("%016x%016x", d.rng.Uint64(), d.rng.Uint64()) }

// await waits until n more tasks are done.
func (d *demo) await(ctx context.Context, n int, what string) error {
	for range n {
		select {
		case <-d.finished:
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s: %w", what, context.Cause(ctx))
		}
	}
	return nil
}

// stopRuntime shuts the runtime down; every task is done by then.
func (d *demo) stopRuntime() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.rt.Shutdown(ctx); err != nil && !errors.Is(err, runtime.ErrNotStarted) {
		return fmt.Errorf("runtime shutdown: %w", err)
	}
	return nil
}

// abort stops the runtime after a failure and reports both.
func (d *demo) abort(err error) error {
	d.p.note("demo", "stopping early: %v", err)
	return errors.Join(err, d.stopRuntime())
}
