package main

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// ot is Overtake: levels low, normal, high; no-op handlers.
type ot struct {
	addr string
	rdb  *redis.Client
}

func newOT(addr string) *ot {
	return &ot{addr: addr, rdb: redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})}
}

func (o *ot) name() string { return "Overtake" }

func (o *ot) client() *queue.Client {
	q, err := queue.New(o.rdb, queue.Config{Namespace: "peers"})
	if err != nil {
		panic(err)
	}
	return q
}

// start runs a runtime with concurrency c and handlers from mux; stop
// shuts it down.
func (o *ot) start(ctx context.Context, c int, mux *handlers.Mux) (stop func()) {
	rt, err := runtime.New(o.client(), mux, runtime.Config{Concurrency: c})
	if err != nil {
		panic(err)
	}
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	}
}

func (o *ot) noopMux(cnt *counter) *handlers.Mux {
	mux := handlers.NewMux()
	mux.HandleFunc("noop", func(context.Context, *queue.Task) error {
		cnt.hit()
		return nil
	})
	return mux
}

func (o *ot) memory(ctx context.Context, n int, payload []byte) float64 {
	q := o.client()
	before := info(ctx, o.rdb, "memory", "used_memory")
	batch := make([]*queue.Task, 0, 1000)
	for i := 0; i < n; i++ {
		batch = append(batch, queue.NewTask("noop", payload))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := q.EnqueueBatch(ctx, batch, queue.Level(i%3)); err != nil {
				panic(err)
			}
			batch = batch[:0]
		}
	}
	return (info(ctx, o.rdb, "memory", "used_memory") - before) / float64(n)
}

func (o *ot) enqueue(ctx context.Context, n, g int) float64 {
	q := o.client()
	start := time.Now()
	parallel(n, g, func(i int) {
		if _, err := q.Enqueue(ctx, queue.NewTask("noop", nil), queue.Level(i%3)); err != nil {
			panic(err)
		}
	})
	return float64(n) / time.Since(start).Seconds()
}

func (o *ot) preEnqueue(ctx context.Context, n int) {
	q := o.client()
	batch := make([]*queue.Task, 0, 1000)
	for i := 0; i < n; i++ {
		batch = append(batch, queue.NewTask("noop", nil))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := q.EnqueueBatch(ctx, batch, queue.Level(i%3)); err != nil {
				panic(err)
			}
			batch = batch[:0]
		}
	}
}

func (o *ot) drain(ctx context.Context, n, c int) float64 {
	o.preEnqueue(ctx, n)
	cnt := newCounter(n)
	start := time.Now()
	stop := o.start(ctx, c, o.noopMux(cnt))
	<-cnt.done
	took := time.Since(start)
	stop()
	return float64(n) / took.Seconds()
}

func (o *ot) work(ctx context.Context, n, c int) {
	cnt := newCounter(n)
	stop := o.start(ctx, c, o.noopMux(cnt))
	q := o.client()
	parallel(n, 16, func(i int) {
		if _, err := q.Enqueue(ctx, queue.NewTask("noop", nil), queue.Level(i%3)); err != nil {
			panic(err)
		}
	})
	<-cnt.done
	stop()
}

func (o *ot) idle(ctx context.Context, d time.Duration) float64 {
	stop := o.start(ctx, 10, o.noopMux(newCounter(-1)))
	defer stop()
	time.Sleep(time.Second) // let it settle: start-up calls are not idle cost
	_ = o.rdb.ConfigResetStat(ctx).Err()
	time.Sleep(d) // the measurement window itself
	return float64(commandCalls(ctx, o.rdb)-1) / d.Seconds()
}

func (o *ot) urgent(ctx context.Context, samples int) []time.Duration {
	lowStarted := make(chan struct{}, 64)
	urgentStarted := make(chan time.Time, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("low", func(ctx context.Context, _ *queue.Task) error {
		lowStarted <- struct{}{}
		<-ctx.Done() // runs until preempted (or shut down)
		if errors.Is(context.Cause(ctx), runtime.ErrPreempted) {
			return context.Cause(ctx)
		}
		return ctx.Err()
	})
	mux.HandleFunc("urgent", func(context.Context, *queue.Task) error {
		urgentStarted <- time.Now()
		return nil
	})
	q := o.client()
	for range 4 {
		if _, err := q.Enqueue(ctx, queue.NewTask("low", nil), queue.Level(0),
			queue.MaxRetries(0)); err != nil {
			panic(err)
		}
	}
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 4,
		Preemption: preemptUnlimited()})
	if err != nil {
		panic(err)
	}
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	}()
	for range 4 {
		<-lowStarted
	}
	out := make([]time.Duration, 0, samples)
	for range samples {
		if _, err := q.Enqueue(ctx, queue.NewTask("urgent", nil), queue.Level(2)); err != nil {
			panic(err)
		}
		sent := time.Now()
		out = append(out, (<-urgentStarted).Sub(sent))
		<-lowStarted // the preempted task is back: the pool is full again
	}
	return out
}

func (o *ot) wake(ctx context.Context, samples int) []time.Duration {
	started := make(chan time.Time, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("noop", func(context.Context, *queue.Task) error {
		started <- time.Now()
		return nil
	})
	stop := o.start(ctx, 4, mux)
	defer stop()
	q := o.client()
	out := make([]time.Duration, 0, samples)
	for range samples {
		if _, err := q.Enqueue(ctx, queue.NewTask("noop", nil), queue.Level(1)); err != nil {
			panic(err)
		}
		sent := time.Now()
		out = append(out, max((<-started).Sub(sent), 0))
	}
	return out
}
