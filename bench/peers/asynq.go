package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// aq is hibiken/asynq: queues low, default, critical with strict priority;
// no-op handlers; everything else at its defaults.
type aq struct {
	addr   string
	rdb    *redis.Client
	lowFor time.Duration // how long a low task of the urgent workload runs
}

var aqQueues = []string{"low", "default", "critical"}

func newAQ(addr string, lowFor time.Duration) *aq {
	return &aq{addr: addr, rdb: redis.NewClient(&redis.Options{Addr: addr}), lowFor: lowFor}
}

func (a *aq) name() string { return "asynq" }

func (a *aq) client() *asynq.Client {
	return asynq.NewClient(asynq.RedisClientOpt{Addr: a.addr, PoolSize: 64})
}

// quiet drops asynq's log lines.
type quiet struct{}

func (quiet) Debug(...any) {}
func (quiet) Info(...any)  {}
func (quiet) Warn(...any)  {}
func (quiet) Error(...any) {}
func (quiet) Fatal(...any) {}

func (a *aq) start(c int, mux *asynq.ServeMux) (stop func()) {
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: a.addr, PoolSize: 64}, asynq.Config{
		Concurrency: c, Queues: map[string]int{"critical": 6, "default": 3, "low": 1}, StrictPriority: true,
		Logger: quiet{}, ShutdownTimeout: time.Second,
	})
	if err := srv.Start(mux); err != nil {
		panic(err)
	}
	return srv.Shutdown
}

func (a *aq) noopMux(cnt *counter) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(context.Context, *asynq.Task) error {
		cnt.hit()
		return nil
	})
	return mux
}

func (a *aq) enqueueN(ctx context.Context, n, g int, payload []byte) {
	c := a.client()
	defer c.Close()
	parallel(n, g, func(i int) {
		if _, err := c.EnqueueContext(ctx, asynq.NewTask("noop", payload), asynq.Queue(aqQueues[i%3])); err != nil {
			panic(err)
		}
	})
}

func (a *aq) memory(ctx context.Context, n int, payload []byte) float64 {
	before := info(ctx, a.rdb, "memory", "used_memory")
	a.enqueueN(ctx, n, 16, payload)
	return (info(ctx, a.rdb, "memory", "used_memory") - before) / float64(n)
}

func (a *aq) enqueue(ctx context.Context, n, g int) float64 {
	start := time.Now()
	a.enqueueN(ctx, n, g, nil)
	return float64(n) / time.Since(start).Seconds()
}

func (a *aq) drain(ctx context.Context, n, c int) float64 {
	a.enqueueN(ctx, n, 16, nil)
	cnt := newCounter(n)
	start := time.Now()
	stop := a.start(c, a.noopMux(cnt))
	<-cnt.done
	took := time.Since(start)
	stop()
	return float64(n) / took.Seconds()
}

func (a *aq) work(ctx context.Context, n, c int) {
	cnt := newCounter(n)
	stop := a.start(c, a.noopMux(cnt))
	a.enqueueN(ctx, n, 16, nil)
	<-cnt.done
	stop()
}

func (a *aq) idle(ctx context.Context, d time.Duration) float64 {
	stop := a.start(10, a.noopMux(newCounter(-1)))
	defer stop()
	time.Sleep(time.Second) // let it settle: start-up calls are not idle cost
	_ = a.rdb.ConfigResetStat(ctx).Err()
	time.Sleep(d) // the measurement window itself
	return float64(commandCalls(ctx, a.rdb)-1) / d.Seconds()
}

func (a *aq) urgent(ctx context.Context, samples int) []time.Duration {
	var running atomic.Int64
	var stopping atomic.Bool
	urgentStarted := make(chan time.Time, 1)
	c := a.client()
	defer c.Close()
	mux := asynq.NewServeMux()
	mux.HandleFunc("low", func(ctx context.Context, _ *asynq.Task) error {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-time.After(a.lowFor):
		case <-ctx.Done():
		}
		if !stopping.Load() { // keep the low work coming, so the slots stay full
			_, _ = c.EnqueueContext(context.Background(), asynq.NewTask("low", nil), asynq.Queue("low"), asynq.MaxRetry(0))
		}
		return nil
	})
	mux.HandleFunc("urgent", func(context.Context, *asynq.Task) error {
		urgentStarted <- time.Now()
		return nil
	})
	for range 4 + 4 { // the 4 slots full, and more waiting
		if _, err := c.EnqueueContext(ctx, asynq.NewTask("low", nil), asynq.Queue("low"), asynq.MaxRetry(0)); err != nil {
			panic(err)
		}
	}
	stop := a.start(4, mux)
	defer stop()
	defer stopping.Store(true)
	out := make([]time.Duration, 0, samples)
	for range samples {
		for running.Load() < 4 {
			time.Sleep(time.Millisecond) // wait for the pool to be full again
		}
		if _, err := c.EnqueueContext(ctx, asynq.NewTask("urgent", nil), asynq.Queue("critical")); err != nil {
			panic(err)
		}
		sent := time.Now()
		out = append(out, (<-urgentStarted).Sub(sent))
	}
	return out
}

func (a *aq) wake(ctx context.Context, samples int) []time.Duration {
	started := make(chan time.Time, 1)
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(context.Context, *asynq.Task) error {
		started <- time.Now()
		return nil
	})
	stop := a.start(4, mux)
	defer stop()
	c := a.client()
	defer c.Close()
	out := make([]time.Duration, 0, samples)
	for range samples {
		if _, err := c.EnqueueContext(ctx, asynq.NewTask("noop", nil), asynq.Queue("default")); err != nil {
			panic(err)
		}
		sent := time.Now()
		out = append(out, max((<-started).Sub(sent), 0))
	}
	return out
}
