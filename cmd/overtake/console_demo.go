package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/telemetry"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// typeImport is a task of console --demo that always fails, so that dead
// letters appear; its payload shows that the console escapes user data.
const typeImport = "import"

// startConsoleDemo starts an embedded Redis and a runtime running the
// demo's workload in a loop (quick tasks at every level, then the
// preemption part, now and then a task that fails for good) until ctx
// ends or stop is called. stop shuts everything down.
func startConsoleDemo(ctx context.Context, stderr io.Writer) (*queue.Client, func() error, error) {
	// go-redis's own lines go where the runtime's do (nowhere: the
	// console's page shows the demo).
	redis.SetLogger(runtime.RedisLogger(zap.NewNop()))
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, nil, fmt.Errorf("start embedded Redis: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	closeAll := func() { _ = rdb.Close(); m.Close() }
	q, err := queue.New(rdb, queue.Config{Namespace: "overtake-demo", Name: "demo"})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	const workers = 2
	d := &demo{
		opts: demoOptions{Concurrency: workers, Load: 2, Seed: uint64(time.Now().UnixNano())},
		p:    &printer{w: io.Discard, start: time.Now(), names: q.Config().LevelNames},
		q:    q, tr: telemetry.Tracer(nil),
		quick: 400 * time.Millisecond, step: 500 * time.Millisecond,
		finished: make(chan string, 64), cue: make(chan string, 1),
		tally: make([]levelTally, q.Levels()),
	}
	d.rng = rand.New(rand.NewPCG(d.opts.Seed, 0x636f6e736f6c65))
	mux := handlers.NewMux()
	for _, typ := range append([]string{typeReport, typeExport, typeAlert}, quickTypes...) {
		handlers.HandleJSON(mux, typ, d.process)
	}
	mux.HandleFunc(typeImport, func(context.Context, *queue.TaskInfo) error {
		return handlers.SkipRetry(errors.New("import: no such file (the demo's import always fails)"))
	})
	d.rt, err = runtime.New(q, mux, runtime.Config{Concurrency: workers, PollInterval: 200 * time.Millisecond,
		HeartbeatInterval: time.Second, GracePeriod: 2 * time.Second, ShutdownTimeout: 5 * time.Second,
		Logger: zap.NewNop()})
	if err == nil {
		err = d.rt.Start(ctx)
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := d.loop(lctx); err != nil && lctx.Err() == nil {
			fmt.Fprintf(stderr, "overtake console: demo workload stopped: %v\n", err)
		}
	})
	stop := func() error {
		cancel()
		wg.Wait()
		err := d.stopRuntime()
		closeAll()
		return err
	}
	return q, stop, nil
}

// loop runs rounds of the demo's workload until ctx ends.
func (d *demo) loop(ctx context.Context) error {
	for round := 0; ctx.Err() == nil; round++ {
		n := 3 * d.opts.Load
		for range n {
			l := d.rng.IntN(3)
			ms := (d.quick * time.Duration(50+d.rng.IntN(100)) / 100).Milliseconds()
			if _, err := d.enqueue(ctx, quickTypes[l], l, demoArgs{Steps: 1, StepMs: ms}); err != nil {
				return err
			}
		}
		if err := d.await(ctx, n, "the quick tasks"); err != nil {
			return err
		}
		if err := d.partPreempt(ctx); err != nil {
			return err
		}
		if round%3 == 0 {
			payload := []byte(`{"file":"<script>alert('report')</script>.csv"}`) // shown as text
			if _, err := d.q.Enqueue(ctx, queue.NewTask(typeImport, payload), queue.Level(1), queue.MaxRetries(0)); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}
