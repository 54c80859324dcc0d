package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ceiling is what Redis sustains from go-redis with g goroutines, each
// with a connection of its own: EVALSHA of `return 1`, calls per second
// over d, after a warm-up of a quarter of d (at most 250 ms). It is the
// yardstick of the enqueue and drain figures: no queue that runs one
// script per task, or per round trip, can beat it.
func ceiling(ctx context.Context, addr string, g int, d time.Duration) (float64, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: max(g, 10)})
	defer c.Close()
	sha, err := c.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		return 0, fmt.Errorf("ceiling: %w", err)
	}
	return hammer(ctx, g, d, func(ctx context.Context) error { return c.EvalSha(ctx, sha, nil).Err() })
}

// hammer runs fn from g goroutines without pause, counts the calls that
// end within d after a warm-up of min(d/4, 250ms), and returns calls per
// second. The first error ends it.
func hammer(ctx context.Context, g int, d time.Duration, fn func(context.Context) error) (float64, error) {
	var (
		n        atomic.Int64
		counting atomic.Bool
		stop     atomic.Bool
		wg       sync.WaitGroup
		errOnce  sync.Once
		first    error
	)
	for range g {
		wg.Go(func() {
			for !stop.Load() {
				if err := fn(ctx); err != nil {
					errOnce.Do(func() { first = err })
					stop.Store(true)
					return
				}
				if counting.Load() {
					n.Add(1)
				}
			}
		})
	}
	time.Sleep(min(d/4, 250*time.Millisecond)) // warm-up: connections dialled, script cached
	counting.Store(true)
	t0 := time.Now()
	time.Sleep(d) // the measurement window
	counting.Store(false)
	el := time.Since(t0)
	stop.Store(true)
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return float64(n.Load()) / el.Seconds(), nil
}

// parallel runs fn(i) for every i in [0, n) from g goroutines, each taking
// the next i as it is free; the first error stops the others from taking
// more and is returned.
func parallel(n, g int, fn func(i int) error) error {
	var (
		next    atomic.Int64
		failed  atomic.Bool
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range min(g, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && !failed.Load(); i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil {
					errOnce.Do(func() { first = err })
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
