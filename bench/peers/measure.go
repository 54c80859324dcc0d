package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// system is one queue under test, seen through its public API. Its tasks
// are no-ops of one type, "noop", at three priorities: 0 (low), 1 (normal,
// asynq's "default" queue) and 2 (urgent, asynq's "critical").
type system interface {
	name() string
	// fill enqueues n pending tasks with payload, priorities in turn,
	// batched where the system can: the set-up of a figure, not timed.
	fill(ctx context.Context, n int, payload []byte) error
	// enqueueEach enqueues n payload-less tasks, priorities in turn, with
	// one Enqueue call each, from g goroutines.
	enqueueEach(ctx context.Context, n, g int) error
	// enqueueOne enqueues one task with payload at priority prio.
	enqueueOne(ctx context.Context, payload []byte, prio int) error
	// start starts one worker of concurrency c (0: the system's default
	// configuration) whose handler calls ran with the task's payload.
	start(ctx context.Context, c int, ran func(payload []byte)) (stop func(), err error)
	// left counts the tasks not yet done: pending, running, scheduled.
	left(ctx context.Context) (int64, error)
	// urgent samples urgent-task start latency on a worker of 4 slots full
	// of long low-priority tasks; capped is how many waits hit o.waitCap.
	urgent(ctx context.Context, samples int, o options) (lat []time.Duration, capped int, err error)
}

// figures are one round's measurements of one system.
type figures struct {
	mem, cmds, cpu, enq, drain, idle   float64
	c16, c64                           float64 // EVALSHA ceilings around the enqueue and the drain run
	urgent50, urgent99, wake50, wake99 float64
	capped                             int     // urgent and wake waits that hit the cap
	ping50, ping99                     float64 // a bare PING after the wake's idle gaps (pingAfterIdle)
	// Redis's and the client process's CPU per 10k tasks, in ms, of the
	// enqueue, drain and batch runs; batch is the batch enqueue's tasks/s
	// (NaN, like its CPU, for a system without one).
	enqRedis, enqClient, drainRedis, drainClient float64
	batch, batchRedis, batchClient               float64
}

// batchSize is how many tasks an EnqueueBatch or addBulk call of the batch
// run takes.
const batchSize = 100

// payload100 is the 100-byte payload of the memory figure.
var payload100 = []byte(strings.Repeat("p", 100))

// measureOnce runs every workload of w once, each on a flushed Redis, and
// dies on any error.
func measureOnce(ctx context.Context, adm *admin, w workloads, o options) figures {
	var f figures
	// flush empties Redis before a workload and names it on stderr, so
	// that a system's own log lines can be told apart.
	flush := func(what string) {
		fmt.Fprintf(os.Stderr, "peers:   %s: %s\n", w.name(), what)
		check(adm.FlushAll(ctx).Err())
	}

	flush("memory")
	before := must(adm.taskMemory(ctx))
	check(w.fill(ctx, o.memTasks, payload100))
	f.mem = (must(adm.taskMemory(ctx)) - before) / float64(o.memTasks)

	flush("commands and CPU")
	win := must(adm.resetStats(ctx))
	cpu0 := must(adm.cpuSeconds(ctx))
	left := must(w.work(ctx, o.workTasks, o.conc, o))
	cpu1 := must(adm.cpuSeconds(ctx))
	f.cmds = float64(must(win.calls(ctx))) / float64(o.workTasks)
	f.cpu = (cpu1 - cpu0) * 1000 * 10_000 / float64(o.workTasks)
	if left != 0 {
		fmt.Fprintf(os.Stderr, "peers: %s: %d tasks of the work run not done after shutdown\n", w.name(), left)
	}

	flush("enqueue")
	f.enq, f.c16 = withCeiling(ctx, adm, 16, o.ceilingFor, func() float64 {
		var rate float64
		f.enqRedis, f.enqClient = perTenK(ctx, adm, o.enqTasks, func() (float64, error) {
			r, cpu, err := w.enqueue(ctx, o.enqTasks, 16)
			rate = r
			return cpu, err
		})
		return rate
	})

	flush("batch enqueue")
	f.batchRedis, f.batchClient = perTenK(ctx, adm, o.enqTasks, func() (float64, error) {
		r, cpu, err := w.batch(ctx, o.enqTasks, 16, batchSize)
		f.batch = r
		return cpu, err
	})
	if math.IsNaN(f.batch) { // no batch enqueue: no Redis CPU of one either
		f.batchRedis = math.NaN()
	}

	flush("drain")
	check(w.fill(ctx, o.drainTasks, nil))
	f.drain, f.c64 = withCeiling(ctx, adm, o.conc, o.ceilingFor, func() float64 {
		var rate float64
		f.drainRedis, f.drainClient = perTenK(ctx, adm, o.drainTasks, func() (float64, error) {
			r, cpu, err := w.drain(ctx, o)
			rate = r
			return cpu, err
		})
		return rate
	})

	flush("idle")
	check(w.idle(ctx, func() {
		time.Sleep(time.Second) // start-up calls are not idle cost
		win := must(adm.resetStats(ctx))
		t0 := time.Now()
		time.Sleep(o.idle) // the measurement window
		f.idle = float64(must(win.calls(ctx))) / time.Since(t0).Seconds()
	}))

	// asynq and BullMQ have no preemption: each urgent sample waits for a
	// low task to end, so they take the peers' (smaller) sample counts.
	peer := w.name() != "Overtake"
	flush("urgent")
	n := o.urgentSamples
	if peer {
		n = o.aqUrgent
	}
	u, capped, err := w.urgent(ctx, n, o)
	check(err)
	f.urgent50, f.urgent99, f.capped = percentile(u, 50), percentile(u, 99), capped

	flush("wake")
	n = o.wakeSamples
	if peer {
		n = o.aqWake
	}
	wk, capped, err := w.wake(ctx, n, o)
	check(err)
	f.wake50, f.wake99, f.capped = percentile(wk, 50), percentile(wk, 99), f.capped+capped

	flush("ping")
	pg := pingAfterIdle(ctx, adm, n, o)
	f.ping50, f.ping99 = percentile(pg, 50), percentile(pg, 99)
	return f
}

// perTenK runs fn, which handles n tasks and returns its client process's
// CPU in ms, and returns Redis's CPU (used_cpu_sys + user) and the
// client's, in ms per 10k tasks. It dies on any error.
func perTenK(ctx context.Context, adm *admin, n int, fn func() (clientMs float64, err error)) (redis, client float64) {
	cpu0 := must(adm.cpuSeconds(ctx))
	clientMs := must(fn())
	cpu1 := must(adm.cpuSeconds(ctx))
	return (cpu1 - cpu0) * 1000 * 10_000 / float64(n), clientMs * 10_000 / float64(n)
}

// withCeiling runs fn between two EVALSHA ceiling measurements of g
// goroutines, each of d/2, and returns fn's result and the mean ceiling.
func withCeiling(ctx context.Context, adm *admin, g int, d time.Duration, fn func() float64) (v, ceil float64) {
	addr := adm.Options().Addr
	before := must(ceiling(ctx, addr, g, d/2))
	v = fn()
	after := must(ceiling(ctx, addr, g, d/2))
	return v, (before + after) / 2
}

// drain times one worker of concurrency o.conc over o.drainTasks
// pre-enqueued no-op tasks, from its start until every task ran and nothing
// is left in the queue (the last completion has landed). Tasks per second.
func drain(ctx context.Context, s system, o options) float64 {
	ran := newCounter(o.drainTasks)
	t0 := time.Now()
	stop := must(s.start(ctx, o.conc, ran.hit))
	defer stop()
	await(ran.done, o.limit, s.name()+" drain")
	for deadline := time.Now().Add(o.limit); must(s.left(ctx)) > 0; {
		if time.Now().After(deadline) {
			die(fmt.Errorf("%s drain: tasks left after %v", s.name(), o.limit))
		}
		time.Sleep(time.Millisecond) // polling the queue's counters for the last completions
	}
	return float64(o.drainTasks) / time.Since(t0).Seconds()
}

// pingAfterIdle samples a bare PING round trip after the same random idle
// gaps as wake, as many samples: the floor of a wake on this machine. A
// wake crosses two idle processes (Redis, then the worker) and takes a
// round trip of its own, and on a VM a process that idled for a while
// may take milliseconds to run again (a PING's p99 after such gaps was
// 3.5 ms on the 2-core machine of docs/bench-history.md, its p50 0.39 ms).
func pingAfterIdle(ctx context.Context, adm *admin, samples int, o options) []time.Duration {
	out := make([]time.Duration, 0, samples)
	for range samples {
		time.Sleep(rand.N(o.gap + 1)) // a random phase, as in wake
		t0 := time.Now()
		check(adm.Ping(ctx).Err())
		out = append(out, time.Since(t0))
	}
	return out
}

// wake samples Enqueue-returned → handler-start latency on an idle worker
// of 4 slots, the samples a random 0..o.gap apart so that they land at
// every phase of a polling worker's sleep.
func wake(ctx context.Context, s system, samples int, o options) ([]time.Duration, int) {
	started := make(chan sample, samples)
	stop := must(s.start(ctx, 4, func(p []byte) { started <- newSample(p) }))
	defer stop()
	out := make([]time.Duration, 0, samples)
	capped := 0
	for i := range samples {
		time.Sleep(rand.N(o.gap + 1)) // a random phase of the worker's idle loop
		check(s.enqueueOne(ctx, []byte(strconv.Itoa(i)), 1))
		d, ok := waitFor(started, i, time.Now(), o.waitCap)
		out = append(out, d)
		if !ok {
			capped++
		}
	}
	return out, capped
}
