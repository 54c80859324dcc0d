package main

import (
	"github.com/overtake/overtake/internal/ckpt"
	"github.com/overtake/overtake/internal/mirror"

	"github.com/overtake/overtake/internal/store"

	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/overtake/overtake/queue"
)

// ceiling measures what Redis itself sustains from go-redis with workers
// concurrent goroutines for d: EVALSHA of a trivial script, then PING.
// The client has the same options as the runtime's.
// It also returns redis-server's CPU time per EVALSHA.
func (b *bench) ceiling(ctx context.Context, workers int, d time.Duration) (evalsha, ping float64, cpu time.Duration, err error) {
	c := newClient(b.addr, b.opts)
	defer c.Close()
	sha, err := c.ScriptLoad(ctx, "return 1").Result()
	if err != nil {
		return 0, 0, 0, err
	}
	var n atomic.Int64
	cpu0 := b.redisCPU(ctx)
	evalsha, err = hammer(ctx, workers, d, func(ctx context.Context) error {
		n.Add(1)
		return c.EvalSha(ctx, sha, nil).Err()
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("evalsha: %w", err)
	}
	if cpu0 >= 0 {
		cpu = (b.redisCPU(ctx) - cpu0) / time.Duration(n.Load())
	}
	ping, err = hammer(ctx, workers, d, func(ctx context.Context) error { return c.Ping(ctx).Err() })
	if err != nil {
		return 0, 0, 0, fmt.Errorf("ping: %w", err)
	}
	return evalsha, ping, cpu, nil
}

// hammer runs op from workers goroutines for d (after a short warm-up) and
// returns operations per second.
func hammer(ctx context.Context, workers int, d time.Duration, op func(context.Context) error) (float64, error) {
	var (
		n        atomic.Int64
		counting atomic.Bool
		stop     atomic.Bool
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range workers {
		wg.Go(func() {
			for !stop.Load() {
				if err := op(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
				if counting.Load() {
					n.Add(1)
				}
			}
		})
	}
	warm := min(d/4, 250*time.Millisecond)
	_ = sleep(ctx, warm)
	counting.Store(true)
	t0 := time.Now()
	_ = sleep(ctx, d)
	counting.Store(false)
	el := time.Since(t0)
	stop.Store(true)
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(n.Load()) / el.Seconds(), ctx.Err()
}

// cpResult is the cost of saving a 1 KiB checkpoint.
type cpResult struct {
	lat      latencies // one goroutine, one save at a time
	parallel float64   // saves/s from workers goroutines, one task each
	workers  int
}

// checkpointCost leases tasks and saves 1 KiB checkpoints through
// ckpt.Handle, the path a handler uses: ops one at a time, then from
// workers goroutines for d.
func (b *bench) checkpointCost(ctx context.Context, ops, workers int, d time.Duration) (cpResult, error) {
	res := cpResult{workers: workers}
	p, err := b.pair("checkpoint")
	if err != nil {
		return res, err
	}
	defer p.close()
	tasks := make([]*queue.Task, workers)
	for i := range tasks {
		tasks[i] = queue.NewTask("cp", nil)
	}
	if _, err := p.prod.EnqueueBatch(ctx, tasks); err != nil {
		return res, err
	}
	lr, err := store.Of(p.rt).Lease(ctx, store.LeaseRequest{Worker: "bench-" + b.ns, Count: workers})
	if err != nil {
		return res, err
	}
	if len(lr.Tasks) != workers {
		return res, fmt.Errorf("leased %d of %d tasks", len(lr.Tasks), workers)
	}
	defer func() {
		for _, t := range lr.Tasks {
			_ = store.Of(p.rt).Ack(context.WithoutCancel(ctx), t)
		}
	}()
	data := make([]byte, 1024)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	h := ckpt.New(store.Of(p.rt), mirror.TaskInfo(&lr.Tasks[0].Info), lr.Tasks[0].Token)
	for i := range ops + ops/10 {
		t0 := time.Now()
		if err := h.Save(ctx, data); err != nil {
			return res, err
		}
		if i >= ops/10 {
			res.lat = append(res.lat, time.Since(t0))
		}
	}
	hs := make([]*ckpt.Handle, workers)
	for i, t := range lr.Tasks {
		hs[i] = ckpt.New(store.Of(p.rt), mirror.TaskInfo(&t.Info), t.Token)
	}
	var next atomic.Int64
	res.parallel, err = hammer(ctx, workers, d, func(ctx context.Context) error {
		return saveOn(ctx, hs, &next, data)
	})
	return res, err
}

// saveOn saves on the handles in turn; each Handle serializes its own
// saves, so goroutines spread over them.
func saveOn(ctx context.Context, hs []*ckpt.Handle, next *atomic.Int64, data []byte) error {
	h := hs[int(next.Add(1))%len(hs)]
	return h.Save(ctx, data)
}
