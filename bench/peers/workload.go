package main

import (
	"context"
	"math"
	"syscall"
	"time"
)

// workloads are the runs of a round that measureOnce measures Redis
// around, the same for every system: a Go system runs them in this
// process (native), BullMQ in a node process per run (bull). Priorities
// are 0 (low), 1 (normal) and 2 (urgent), taken in turn.
type workloads interface {
	name() string
	// fill enqueues n pending tasks with payload, batched where the
	// system can: the set-up of a figure, not timed.
	fill(ctx context.Context, n int, payload []byte) error
	// work runs a worker of concurrency c while n payload-less tasks are
	// enqueued one call each from 16 callers, until every task ran and the
	// worker stopped; left counts the tasks not done after.
	work(ctx context.Context, n, c int, o options) (left int64, err error)
	// enqueue enqueues n payload-less tasks, one call each, from g
	// callers: tasks per second, and the producer process's CPU in ms.
	enqueue(ctx context.Context, n, g int) (rate, cpuMs float64, err error)
	// batch enqueues n payload-less tasks in batches of size, from g
	// callers, each batch at one priority: like enqueue, NaN for a system
	// without a batch enqueue.
	batch(ctx context.Context, n, g, size int) (rate, cpuMs float64, err error)
	// drain times a worker of concurrency o.conc over o.drainTasks
	// pre-enqueued no-op tasks (see drain): tasks per second, and the
	// worker process's CPU in ms, its start and stop included.
	drain(ctx context.Context, o options) (rate, cpuMs float64, err error)
	// idle starts a worker at the system's default configuration, calls
	// measure, and stops the worker.
	idle(ctx context.Context, measure func()) error
	// urgent samples urgent-task start latency on a worker of 4 slots full
	// of low-priority tasks; capped is how many waits hit o.waitCap.
	urgent(ctx context.Context, samples int, o options) (lat []time.Duration, capped int, err error)
	// wake samples Enqueue-returned → handler-start latency on an idle
	// worker of 4 slots (see wake).
	wake(ctx context.Context, samples int, o options) (lat []time.Duration, capped int, err error)
}

// batcher is a system with a batch enqueue: n payload-less tasks in
// batches of size from g goroutines, each batch at one priority.
type batcher interface {
	enqueueBatch(ctx context.Context, n, g, size int) error
}

// native runs the workloads of a Go system in this process; its process
// CPU is this process's (getrusage), the benchmark's own share included.
type native struct{ system }

func (n native) work(ctx context.Context, tasks, c int, o options) (int64, error) {
	ran := newCounter(tasks)
	stop, err := n.start(ctx, c, ran.hit)
	if err != nil {
		return 0, err
	}
	if err := n.enqueueEach(ctx, tasks, 16); err != nil {
		return 0, err
	}
	await(ran.done, o.limit, n.name()+" work")
	stop()
	return n.left(ctx)
}

func (n native) enqueue(ctx context.Context, tasks, g int) (float64, float64, error) {
	return timed(tasks, func() error { return n.enqueueEach(ctx, tasks, g) })
}

func (n native) batch(ctx context.Context, tasks, g, size int) (float64, float64, error) {
	b, ok := n.system.(batcher)
	if !ok {
		return math.NaN(), math.NaN(), nil
	}
	return timed(tasks, func() error { return b.enqueueBatch(ctx, tasks, g, size) })
}

func (n native) drain(ctx context.Context, o options) (rate, cpuMs float64, err error) {
	cpu0 := processCPU()
	rate = drain(ctx, n.system, o)
	return rate, (processCPU() - cpu0).Seconds() * 1000, nil
}

func (n native) idle(ctx context.Context, measure func()) error {
	stop, err := n.start(ctx, 0, func([]byte) {})
	if err != nil {
		return err
	}
	measure()
	stop()
	return nil
}

func (n native) wake(ctx context.Context, samples int, o options) ([]time.Duration, int, error) {
	lat, capped := wake(ctx, n.system, samples, o)
	return lat, capped, nil
}

// timed runs fn, which handles tasks tasks: tasks per second, and this
// process's CPU over fn in ms.
func timed(tasks int, fn func() error) (rate, cpuMs float64, err error) {
	cpu0, t0 := processCPU(), time.Now()
	if err := fn(); err != nil {
		return 0, 0, err
	}
	return float64(tasks) / time.Since(t0).Seconds(), (processCPU() - cpu0).Seconds() * 1000, nil
}

// processCPU is this process's CPU time so far, user + system
// (getrusage RUSAGE_SELF); 0 if it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
