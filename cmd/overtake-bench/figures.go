package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/overtake/overtake/preempt"
	otrt "github.com/overtake/overtake/runtime"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func gomaxprocs() int { return goruntime.GOMAXPROCS(0) }

func progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "overtake-bench: "+format+"\n", a...)
}

// want reports whether --only selects the figure group g.
func (o options) want(g string) bool {
	return o.only == "" || slices.Contains(strings.Split(o.only, ","), g)
}

// figures measures everything in turn and fills t. A figure that fails is
// reported as an error row; the others still run.
func (b *bench) figures(ctx context.Context, t *table) {
	o := b.opts
	var c ceil
	c.err = errors.New("not measured (--only)")
	if o.want("ceiling") {
		progress("redis ceiling (%v each)", o.ceiling)
		c.evalsha, c.ping, c.cpu, c.err = b.ceiling(ctx, o.concurrency, o.ceiling)
	}
	if o.want("tput") {
		if best, err := b.throughputs(ctx); err != nil {
			t.skip("1", "throughput", err)
		} else {
			b.throughputRows(t, best, c)
		}
	} else if c.err == nil {
		t.add(row{id: "3", figure: "Redis ceiling: EVALSHA / PING", value: num(c.evalsha) + " / " + num(c.ping), unit: "ops/s"})
	}
	if o.want("checkpoint") {
		b.checkpointRows(ctx, t)
	}
	if o.want("wake") {
		b.wakeRows(ctx, t)
	}
	if o.want("preempt") {
		b.preemptRows(ctx, t)
	}
	if o.want("cancel") {
		b.cancelRows(ctx, t)
	}
	if o.want("idle") {
		b.idleRows(ctx, t)
	}
	if slices.Contains(strings.Split(o.only, ","), "cpu") { // only when asked: make bench-cpu
		b.cpuRows(ctx, t)
	}
	if slices.Contains(strings.Split(o.only, ","), "spread") { // only when asked: see spread.go
		b.spreadRows(ctx, t)
	}
}

func (b *bench) checkpointRows(ctx context.Context, t *table) {
	o := b.opts
	progress("checkpoint save cost")
	if cp, err := b.checkpointCost(ctx, o.checkpointOps, o.concurrency, o.ceiling); err != nil {
		t.skip("7", "checkpoint save", err)
	} else {
		t.add(row{id: "7", figure: "checkpoint save, 1 KiB, one at a time", value: num(us(cp.lat.mean())),
			unit: "µs/op", target: "—", note: fmt.Sprintf("info: %s ops/s; p50 %s µs, p99 %s µs, n=%d",
				num(1/cp.lat.mean().Seconds()), num(us(cp.lat.pct(50))), num(us(cp.lat.pct(99))), len(cp.lat))})
		t.add(row{id: "7", figure: fmt.Sprintf("checkpoint save, 1 KiB, %d goroutines", cp.workers),
			value: num(cp.parallel), unit: "ops/s", target: "—",
			note: fmt.Sprintf("info: %s µs/op amortized", num(1e6/cp.parallel))})
	}
}

func (b *bench) wakeRows(ctx context.Context, t *table) {
	o := b.opts
	progress("wake latency (%d samples)", o.wakeSamples)
	if w, err := b.wake(ctx, o.wakeSamples); err != nil {
		t.skip("4", "wake latency", err)
	} else {
		t.add(row{id: "4", figure: "wake latency p50 (idle, Concurrency 4, Enqueue return → handler start)",
			value: ms(w.lat.pct(50)), unit: "ms", target: "—", note: "info: " + w.lat.summary()})
		note := w.lat.summary()
		if w.early > 0 {
			note += fmt.Sprintf("; %d started before Enqueue returned (counted 0)", w.early)
		}
		t.add(row{id: "4", figure: "wake latency p99", value: ms(w.lat.pct(99)), unit: "ms", target: "< 5 ms",
			note: verdict(w.lat.pct(99) < 5*time.Millisecond) + ": " + note})
	}
}

func (b *bench) preemptRows(ctx context.Context, t *table) {
	o := b.opts
	progress("preemption latency (%d samples)", o.preemptSamples)
	if p, err := b.preemption(ctx, o.preemptSamples, o.resumeLong); err != nil {
		t.skip("6", "preemption latency", err)
	} else {
		t.add(row{id: "6", figure: "preemption latency p50 (4 slots busy with low tasks, urgent Enqueue return → urgent start)",
			value: ms(p.lat.pct(50)), unit: "ms", target: "—", note: "info: " + p.lat.summary()})
		note := fmt.Sprintf("%s; runtime counted %d preempted, %d reserved, %d stuck",
			p.lat.summary(), p.stats.Preempted, p.stats.Reserved, p.stats.Stuck)
		t.add(row{id: "6", figure: "preemption latency p99", value: ms(p.lat.pct(99)), unit: "ms", target: "< 5 ms",
			note: verdict(p.lat.pct(99) < 5*time.Millisecond) + ": " + note})
	}
}

func (b *bench) idleRows(ctx context.Context, t *table) {
	o := b.opts
	progress("idle cost (%v)", o.idle)
	if ic, err := b.idleCost(ctx, o.idle); err != nil {
		t.skip("5", "idle cost", err)
	} else {
		t.add(row{id: "5", figure: "idle cost: round trips from the runtime's client (hook)", value: num(ic.clientPerSec),
			unit: "cmds/s", target: "< 2/s", note: fmt.Sprintf("%s: %d in %v: %s", verdict(ic.clientPerSec < 2),
				ic.client.trips, ic.window, ic.client.perTask(1))})
		t.add(row{id: "5", figure: "idle cost: socket writes on all the runtime's connections, Pub/Sub included",
			value: num(ic.writesPerSec), unit: "writes/s", target: "< 2/s",
			note: fmt.Sprintf("%s: %d in %v (Pub/Sub health-check PINGs are the difference)",
				verdict(ic.writesPerSec < 2), ic.client.writes, ic.window)})
		t.add(row{id: "5", figure: "idle cost: Redis total_commands_processed, commands inside scripts included",
			value: num(ic.serverPerSec), unit: "cmds/s", target: "—",
			note: fmt.Sprintf("info: %d in %v; each idle lease script runs ~8 commands inside Redis", ic.server, ic.window)})
	}
}

// ceil is Redis's own ceiling (figure 3).
type ceil struct {
	evalsha, ping float64
	cpu           time.Duration // redis-server CPU per trivial EVALSHA
	err           error
}

// variant is one runtime configuration of the throughput runs.
type variant struct {
	name    string
	tracing bool
	cfg     otrt.Config
}

// tputBest is the best run of each variant, plus what tracing exported.
type tputBest struct {
	on, off, traced tputResult
	spans           int64
	exports         int64
	runs            map[string][]float64 // tasks/s of every run, by variant
}

// throughputs runs each variant o.rounds times, interleaved and in
// alternating order so that drift on a shared machine hits all of them
// alike, and keeps the fastest run of each. A short unreported run warms Redis and the process up first.
func (b *bench) throughputs(ctx context.Context) (tputBest, error) {
	o := b.opts
	best := tputBest{runs: map[string][]float64{}}
	on := otrt.Config{Concurrency: o.concurrency}
	off := otrt.Config{Concurrency: o.concurrency, Preemption: preempt.Policy{Disabled: true}}
	variants := []variant{{"on", false, on}, {"off", false, off}, {"traced", true, on}}
	warm := min(o.tasks, 5000)
	progress("throughput warm-up (%d tasks)", warm)
	if _, err := b.throughput(ctx, "tput-warm", warm, on); err != nil {
		return best, err
	}
	for r := 1; r <= o.rounds; r++ {
		if r > 1 {
			slices.Reverse(variants) // on, off, traced; then traced, off, on; ...
		}
		for _, v := range variants {
			progress("throughput round %d/%d, %s: %d tasks", r, o.rounds, v.name, o.tasks)
			goruntime.GC()
			res, spans, exports, err := b.throughputVariant(ctx, fmt.Sprintf("tput-%s-%d", v.name, r), v)
			if err != nil {
				return best, fmt.Errorf("%s: %w", v.name, err)
			}
			progress("  %.0f tasks/s, %.3f round trips/task", res.tasksPer, float64(res.trips.trips)/float64(res.n))
			best.runs[v.name] = append(best.runs[v.name], res.tasksPer)
			switch v.name {
			case "on":
				best.on = better(best.on, res)
			case "off":
				best.off = better(best.off, res)
			default:
				if res.tasksPer > best.traced.tasksPer {
					best.spans, best.exports = spans, exports
				}
				best.traced = better(best.traced, res)
			}
		}
	}
	return best, nil
}

func better(a, b tputResult) tputResult {
	if b.tasksPer > a.tasksPer {
		return b
	}
	return a
}

// throughputVariant runs one variant; with tracing it sets up the
// providers (OTLP to a local sink, or a discarding exporter), flushes them
// after the run (untimed) and returns the spans exported and the export
// requests the sink got.
func (b *bench) throughputVariant(ctx context.Context, name string, v variant) (tputResult, int64, int64, error) {
	if !v.tracing {
		res, err := b.throughput(ctx, name, b.opts.tasks, v.cfg)
		return res, 0, 0, err
	}
	cfg := v.cfg
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if b.opts.traceExporter == "discard" {
		d := &discard{}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(d))
		cfg.TracerProvider = tp
		res, err := b.throughput(ctx, name, b.opts.tasks, cfg)
		err = errors.Join(err, tp.Shutdown(sctx))
		return res, d.spans.Load(), 0, err
	}
	s := newSink()
	defer s.close()
	p, err := providers(ctx, s, b.opts.metrics)
	if err != nil {
		return tputResult{}, 0, 0, err
	}
	cfg.TracerProvider, cfg.MeterProvider = p.TracerProvider, p.MeterProvider
	res, err := b.throughput(ctx, name, b.opts.tasks, cfg)
	err = errors.Join(err, p.Shutdown(sctx))
	return res, s.spans.Load(), s.requests.Load(), err
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
