package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// ot is Overtake through its public API: one queue of the default three
// levels (0 low, 1 normal, 2 high), runtimes at their defaults but for
// the concurrency.
type ot struct {
	rdb *redis.Client
	q   *queue.Client
}

func newOT(addr string) *ot {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	q, err := queue.New(rdb, queue.Config{Name: "peers"})
	check(err)
	return &ot{rdb: rdb, q: q}
}

func (o *ot) name() string { return "Overtake" }

// fill uses EnqueueBatch, 1000 tasks a call, each batch at one level.
func (o *ot) fill(ctx context.Context, n int, payload []byte) error {
	batch := make([]*queue.Task, 0, 1000)
	for i := range n {
		batch = append(batch, queue.NewTask("noop", payload))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := o.q.EnqueueBatch(ctx, batch, queue.Level(i/1000%3)); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

func (o *ot) enqueueEach(ctx context.Context, n, g int) error {
	return parallel(n, g, func(i int) error {
		_, err := o.q.Enqueue(ctx, queue.NewTask("noop", nil), queue.Level(i%3))
		return err
	})
}

// enqueueBatch makes o a batcher: EnqueueBatch calls of size tasks from
// g goroutines, batch b at level b%3.
func (o *ot) enqueueBatch(ctx context.Context, n, g, size int) error {
	return parallel((n+size-1)/size, g, func(b int) error {
		batch := make([]*queue.Task, 0, size)
		for range min(size, n-b*size) {
			batch = append(batch, queue.NewTask("noop", nil))
		}
		_, err := o.q.EnqueueBatch(ctx, batch, queue.Level(b%3))
		return err
	})
}

func (o *ot) enqueueOne(ctx context.Context, payload []byte, prio int) error {
	_, err := o.q.Enqueue(ctx, queue.NewTask("noop", payload), queue.Level(prio))
	return err
}

func (o *ot) start(ctx context.Context, c int, ran func([]byte)) (func(), error) {
	mux := handlers.NewMux()
	mux.HandleFunc("noop", func(_ context.Context, t *queue.TaskInfo) error {
		ran(t.Payload)
		return nil
	})
	return o.run(ctx, mux, runtime.Config{Concurrency: c})
}

// run starts a runtime; the returned stop shuts it down (30 s at most).
func (o *ot) run(ctx context.Context, h handlers.Handler, cfg runtime.Config) (func(), error) {
	rt, err := runtime.New(o.q, h, cfg)
	if err != nil {
		return nil, err
	}
	if err := rt.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Shutdown(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "peers: Overtake shutdown:", err)
		}
	}, nil
}

func (o *ot) left(ctx context.Context) (int64, error) {
	st, err := o.q.Stats(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, l := range st.Levels {
		n += l.Pending + l.Active + l.Scheduled
	}
	return n, nil
}

// urgent fills the 4 slots with low tasks that run until preempted, then
// enqueues urgent tasks one at a time: each preempts a low task, which is
// requeued and takes its slot back once the urgent one is done. The
// preemption policy is the default one but for MaxPreemptions, unlimited,
// so that the same low tasks can be preempted sample after sample.
func (o *ot) urgent(ctx context.Context, samples int, opt options) ([]time.Duration, int, error) {
	lowStarted := make(chan struct{}, 64)
	started := make(chan sample, samples)
	mux := handlers.NewMux()
	mux.HandleFunc("low", func(ctx context.Context, _ *queue.TaskInfo) error {
		lowStarted <- struct{}{}
		<-ctx.Done()              // runs until preempted (or shut down)
		return context.Cause(ctx) // ErrPreempted or ErrShutdown: requeued, not failed
	})
	mux.HandleFunc("noop", func(_ context.Context, t *queue.TaskInfo) error {
		started <- newSample(t.Payload)
		return nil
	})
	for range 4 {
		if _, err := o.q.Enqueue(ctx, queue.NewTask("low", nil), queue.Level(0), queue.MaxRetries(0)); err != nil {
			return nil, 0, err
		}
	}
	stop, err := o.run(ctx, mux, runtime.Config{Concurrency: 4,
		Preemption: preempt.Policy{MaxPreemptions: preempt.Unlimited}})
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	for range 4 {
		select {
		case <-lowStarted:
		case <-time.After(opt.limit):
			return nil, 0, errors.New("overtake urgent: the low tasks did not start")
		}
	}
	out := make([]time.Duration, 0, samples)
	capped := 0
	for i := range samples {
		if err := o.enqueueOne(ctx, []byte(strconv.Itoa(i)), 2); err != nil {
			return nil, 0, err
		}
		d, ok := waitFor(started, i, time.Now(), opt.waitCap)
		out = append(out, d)
		if !ok {
			capped++
		}
		// The preempted task is back in its slot: the pool is full again.
		select {
		case <-lowStarted:
		case <-time.After(opt.limit):
			return nil, 0, errors.New("overtake urgent: the preempted low task did not restart")
		}
	}
	return out, capped, nil
}
