package main

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/overtake/overtake/queue"
	otrt "github.com/overtake/overtake/runtime"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// cpuGoroutines is both the producers of the single-Enqueue phase and the
// runtime's Concurrency in the drain phases of the CPU figure (group cpu).
const cpuGoroutines = 16

// cpuCost is what one phase cost per task: this process's CPU time (user
// plus system, getrusage) and heap allocations, and redis-server's CPU
// time (INFO cpu).
type cpuCost struct {
	proc, redis time.Duration
	allocs      float64
	perCall     float64 // tasks per lease call (drains only)
	rate        float64 // tasks a second
}

// cpuPhase is one side of a task's life measured on its own, so that this
// process's CPU time is that side's alone.
type cpuPhase struct {
	name, figure string
	run          func(ctx context.Context, name string, n int) (cpuCost, error)
}

func (b *bench) cpuPhases() []cpuPhase {
	return []cpuPhase{
		{"enqueue", fmt.Sprintf("producer: single Enqueue, %d goroutines", cpuGoroutines), b.cpuEnqueue},
		{"batch", fmt.Sprintf("producer: EnqueueBatch of %d, %d goroutines", b.opts.batch, fillers), b.cpuBatch},
		{"drain", fmt.Sprintf("worker: drain, Concurrency %d, no tracer provider", cpuGoroutines), b.cpuDrain(false)},
		{"traced", "worker: drain, SDK tracer provider (AlwaysSample, batch processor, discarding exporter)", b.cpuDrain(true)},
	}
}

// cpuRows measures the CPU time per no-op task of each phase, o.rounds
// times in alternating order after an unreported warm-up round, and adds
// a row per phase: the median of this process, the median of Redis, and
// every run.
func (b *bench) cpuRows(ctx context.Context, t *table) {
	o := b.opts
	phases := b.cpuPhases()
	runs := map[string][]cpuCost{}
	warm := min(o.tasks, 5000)
	for r := 0; r <= o.rounds; r++ {
		if r > 1 {
			slices.Reverse(phases)
		}
		n := o.tasks
		if r == 0 {
			n = warm
		}
		for _, p := range phases {
			progress("cpu round %d/%d, %s: %d tasks", r, o.rounds, p.name, n)
			goruntime.GC()
			var c cpuCost
			var err error
			// The label marks every goroutine the phase starts, so that
			// --cpuprofile can be split by phase (pprof -tagfocus phase=drain).
			pprof.Do(ctx, pprof.Labels("phase", p.name), func(ctx context.Context) {
				c, err = p.run(ctx, fmt.Sprintf("cpu-%s-%d", p.name, r), n)
			})
			if err != nil {
				t.skip("10", "CPU per task, "+p.name, err)
				return
			}
			progress("  this process %.2f µs/task (%.1f allocations), redis-server %.2f µs/task, %.1f tasks a lease call, %.0f tasks/s",
				us(c.proc), c.allocs, us(c.redis), c.perCall, c.rate)
			if r > 0 {
				runs[p.name] = append(runs[p.name], c)
			}
		}
	}
	med := map[string]cpuCost{}
	for _, p := range b.cpuPhases() {
		rs := runs[p.name]
		m := cpuCost{proc: time.Duration(median(rs, func(c cpuCost) float64 { return float64(c.proc) })),
			redis:   time.Duration(median(rs, func(c cpuCost) float64 { return float64(c.redis) })),
			allocs:  median(rs, func(c cpuCost) float64 { return c.allocs }),
			perCall: median(rs, func(c cpuCost) float64 { return c.perCall }),
			rate:    median(rs, func(c cpuCost) float64 { return c.rate })}
		calls := ""
		if m.perCall > 0 {
			calls = fmt.Sprintf(", %s tasks a lease call", num(m.perCall))
		}
		med[p.name] = m
		t.add(row{id: "10", figure: "CPU per task, " + p.figure, value: num(us(m.proc)), unit: "µs/task", target: "—",
			note: fmt.Sprintf("info: this process, median of %d runs (%s), %s heap allocations/task; redis-server %s µs/task (%s)%s; %s tasks/s; %d tasks a run, protocol %s",
				len(rs), cpuList(rs, true), num(m.allocs), num(us(m.redis)), cpuList(rs, false), calls, num(m.rate), o.tasks, protocolName(o.protocol))})
	}
	e, d := med["enqueue"], med["drain"]
	t.add(row{id: "10", figure: "CPU per task, end to end: single Enqueue + silent drain, producer + worker + redis-server",
		value: num(us(e.proc + d.proc + e.redis + d.redis)), unit: "µs/task", target: "—",
		note: fmt.Sprintf("info: producer %s, worker %s, redis-server %s (enqueue %s + drain %s)", num(us(e.proc)), num(us(d.proc)),
			num(us(e.redis+d.redis)), num(us(e.redis)), num(us(d.redis)))})
}

// cpuEnqueue enqueues n no-op tasks with single Enqueue calls from
// cpuGoroutines goroutines, at 3 levels.
func (b *bench) cpuEnqueue(ctx context.Context, name string, n int) (cpuCost, error) {
	q, err := queue.New(b.prod, queue.Config{Namespace: b.ns, Name: name, Shards: b.opts.queueShards})
	if err != nil {
		return cpuCost{}, err
	}
	return b.measureCPU(ctx, n, func() error { return enqueueEach(ctx, []*queue.Client{q}, n, cpuGoroutines) })
}

// cpuBatch enqueues n no-op tasks with EnqueueBatch, as the throughput
// runs pre-enqueue.
func (b *bench) cpuBatch(ctx context.Context, name string, n int) (cpuCost, error) {
	q, err := queue.New(b.prod, queue.Config{Namespace: b.ns, Name: name, Shards: b.opts.queueShards})
	if err != nil {
		return cpuCost{}, err
	}
	return b.measureCPU(ctx, n, func() error { return b.fill(ctx, q, n) })
}

// cpuDrain returns a phase that pre-enqueues n tasks (unmeasured), then
// measures a runtime of the default configuration and Concurrency
// cpuGoroutines from Start to the last ack (the throughput run), traced
// by an SDK tracer provider with a discarding exporter when traced.
func (b *bench) cpuDrain(traced bool) func(ctx context.Context, name string, n int) (cpuCost, error) {
	return func(ctx context.Context, name string, n int) (cpuCost, error) {
		cfg := otrt.Config{Concurrency: cpuGoroutines}
		var tp *sdktrace.TracerProvider
		if traced {
			tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(&discard{}))
			cfg.TracerProvider = tp
		}
		res, err := b.throughput(ctx, name, n, cfg)
		if tp != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			err = errors.Join(err, tp.Shutdown(sctx))
		}
		c := cpuCost{proc: res.cpu, redis: res.redisCPU, allocs: res.allocs, rate: res.tasksPer}
		if leases := res.trips.kinds["lease"]; leases > 0 {
			c.perCall = float64(res.trips.leased) / float64(leases)
		}
		return c, err
	}
}

// measureCPU runs fn and returns the CPU time per task (of n) it cost
// this process and redis-server.
func (b *bench) measureCPU(ctx context.Context, n int, fn func() error) (cpuCost, error) {
	cpu0, rcpu0, allocs0, t0 := processCPU(), b.redisCPU(ctx), heapAllocs(), time.Now()
	if err := fn(); err != nil {
		return cpuCost{}, err
	}
	c := cpuCost{proc: (processCPU() - cpu0) / time.Duration(n), allocs: float64(heapAllocs()-allocs0) / float64(n),
		rate: float64(n) / time.Since(t0).Seconds()}
	if rcpu0 >= 0 {
		c.redis = (b.redisCPU(ctx) - rcpu0) / time.Duration(n)
	}
	return c, nil
}

// median returns the median of f over rs (of two middle values, their
// mean), 0 for none.
func median[T any](rs []T, f func(T) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

// cpuList lists every run's figure (this process's when proc, else
// Redis's) in µs, in run order.
func cpuList(rs []cpuCost, proc bool) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		d := r.redis
		if proc {
			d = r.proc
		}
		parts[i] = num(us(d))
	}
	return strings.Join(parts, ", ")
}

func protocolName(p int) string {
	if p == 0 {
		return "go-redis default (RESP3)"
	}
	return fmt.Sprintf("RESP%d", p)
}
