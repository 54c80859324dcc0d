package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

// aq is hibiken/asynq: queues "low", "default" and "critical" for the
// three priorities, served with StrictPriority; everything else at its
// defaults, and a server at asynq's entire default configuration for the
// idle figure.
type aq struct {
	addr   string
	c      *asynq.Client
	ins    *asynq.Inspector
	lowFor time.Duration // how long a low task of the urgent workload runs
}

// aqQueues are asynq's queues by priority.
var aqQueues = []string{"low", "default", "critical"}

func newAQ(addr string, lowFor time.Duration) *aq {
	return &aq{addr: addr, lowFor: lowFor,
		c:   asynq.NewClient(asynq.RedisClientOpt{Addr: addr, PoolSize: 64}),
		ins: asynq.NewInspector(asynq.RedisClientOpt{Addr: addr})}
}

func (a *aq) name() string { return "asynq" }

// quiet drops asynq's log lines.
type quiet struct{}

func (quiet) Debug(...any) {}
func (quiet) Info(...any)  {}
func (quiet) Warn(...any)  {}
func (quiet) Error(...any) {}
func (quiet) Fatal(...any) {}

// fill has no batch API to use: one Enqueue per task, from 16 goroutines.
func (a *aq) fill(ctx context.Context, n int, payload []byte) error {
	return parallel(n, 16, func(i int) error { return a.enqueueOne(ctx, payload, i%3) })
}

func (a *aq) enqueueEach(ctx context.Context, n, g int) error {
	return parallel(n, g, func(i int) error { return a.enqueueOne(ctx, nil, i%3) })
}

func (a *aq) enqueueOne(ctx context.Context, payload []byte, prio int) error {
	_, err := a.c.EnqueueContext(ctx, asynq.NewTask("noop", payload), asynq.Queue(aqQueues[prio]))
	return err
}

func (a *aq) start(_ context.Context, c int, ran func([]byte)) (func(), error) {
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(_ context.Context, t *asynq.Task) error {
		ran(t.Payload())
		return nil
	})
	return a.serve(c, mux)
}

// serve starts a server of concurrency c (0: asynq's default config) with
// mux; the returned stop shuts it down.
func (a *aq) serve(c int, mux *asynq.ServeMux) (func(), error) {
	cfg := asynq.Config{Logger: quiet{}}
	opt := asynq.RedisClientOpt{Addr: a.addr}
	if c > 0 {
		cfg.Concurrency, cfg.StrictPriority = c, true
		cfg.Queues = map[string]int{"critical": 6, "default": 3, "low": 1}
		opt.PoolSize = max(c, 10)
	}
	srv := asynq.NewServer(opt, cfg)
	if err := srv.Start(mux); err != nil {
		return nil, err
	}
	return srv.Shutdown, nil
}

func (a *aq) left(context.Context) (int64, error) {
	queues, err := a.ins.Queues() // GetQueueInfo fails on a queue never used
	if err != nil {
		return 0, err
	}
	var n int64
	for _, q := range queues {
		info, err := a.ins.GetQueueInfo(q)
		if err != nil {
			return 0, err
		}
		n += int64(info.Pending + info.Active + info.Scheduled + info.Retry)
	}
	return n, nil
}

// urgent keeps the 4 slots full of low tasks of a.lowFor, each enqueueing
// its successor as it ends, and enqueues urgent tasks on "critical" one at
// a time, each at a random moment of the low tasks' run: asynq has no
// preemption, so an urgent task waits for a slot to free, then strict
// priority makes it the next one to run.
func (a *aq) urgent(ctx context.Context, samples int, o options) ([]time.Duration, int, error) {
	var running atomic.Int64
	var stopping atomic.Bool
	started := make(chan sample, samples)
	low := func() error {
		_, err := a.c.EnqueueContext(ctx, asynq.NewTask("low", nil), asynq.Queue("low"), asynq.MaxRetry(0))
		return err
	}
	mux := asynq.NewServeMux()
	mux.HandleFunc("low", func(ctx context.Context, _ *asynq.Task) error {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-time.After(a.lowFor):
		case <-ctx.Done():
		}
		if !stopping.Load() { // keep the low work coming, so the slots stay full
			_ = low()
		}
		return nil
	})
	mux.HandleFunc("noop", func(_ context.Context, t *asynq.Task) error {
		started <- newSample(t.Payload())
		return nil
	})
	for range 4 + 4 { // the 4 slots full, and more waiting
		if err := low(); err != nil {
			return nil, 0, err
		}
	}
	stop, err := a.serve(4, mux)
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	defer stopping.Store(true)
	out := make([]time.Duration, 0, samples)
	capped := 0
	for i := range samples {
		for deadline := time.Now().Add(o.limit); running.Load() < 4; {
			if time.Now().After(deadline) {
				return nil, 0, errors.New("asynq urgent: the 4 slots did not fill")
			}
			time.Sleep(time.Millisecond) // polling the handlers' count: the pool is refilling
		}
		time.Sleep(rand.N(a.lowFor)) // a random moment of the low tasks' run
		if err := a.enqueueOne(ctx, []byte(strconv.Itoa(i)), 2); err != nil {
			return nil, 0, err
		}
		d, ok := waitFor(started, i, time.Now(), o.waitCap)
		out = append(out, d)
		if !ok {
			capped++
		}
	}
	return out, capped, nil
}
