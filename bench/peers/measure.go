package main

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// system is one queue under test: each method runs one workload on a
// flushed Redis and returns its figure.
type system interface {
	name() string
	// memory enqueues n pending tasks with payload and returns used_memory
	// bytes per task.
	memory(ctx context.Context, n int, payload []byte) float64
	// enqueue enqueues n tasks with one call each from g goroutines and
	// returns tasks/s.
	enqueue(ctx context.Context, n, g int) float64
	// drain pre-enqueues n no-op tasks, starts one worker with concurrency c
	// and returns tasks/s until all are done.
	drain(ctx context.Context, n, c int) float64
	// work enqueues n no-op tasks one call each (16 goroutines) while a
	// worker with concurrency c processes them, until all are done.
	work(ctx context.Context, n, c int)
	// idle runs one idle worker for d and returns Redis commands per second.
	idle(ctx context.Context, d time.Duration) float64
	// urgent returns samples of urgent-task start latency while a worker of
	// 4 slots is full of long low-priority tasks.
	urgent(ctx context.Context, samples int) []time.Duration
	// wake returns samples of Enqueue-returned → handler-start latency on an
	// idle worker.
	wake(ctx context.Context, samples int) []time.Duration
}

// hammer runs fn from g goroutines for d and returns calls per second.
func hammer(ctx context.Context, g int, d time.Duration, fn func(context.Context) error) float64 {
	var n atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if fn(ctx) == nil {
					n.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

// ceiling is what Redis sustains from go-redis with g goroutines: EVALSHA
// of `return 1`, calls per second.
func ceiling(ctx context.Context, addr string, g int, d time.Duration) float64 {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: max(g, 10)})
	defer c.Close()
	sha, err := c.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		return 0
	}
	return hammer(ctx, g, d, func(ctx context.Context) error { return c.EvalSha(ctx, sha, nil).Err() })
}

// parallel runs fn(i) for i in [0, n) from g goroutines.
func parallel(n, g int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile returns the p-th percentile (0..100) of ds, in ms.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p / 100)
	return float64(s[i]) / float64(time.Millisecond)
}

// counter counts handler runs and closes done at want.
type counter struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func newCounter(want int) *counter { return &counter{want: int64(want), done: make(chan struct{})} }

func (c *counter) hit() {
	if c.n.Add(1) == c.want {
		close(c.done)
	}
}
