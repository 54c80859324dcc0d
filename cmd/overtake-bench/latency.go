package main

import (
	"github.com/overtake/overtake/internal/ckpt"

	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
	otrt "github.com/overtake/overtake/runtime"
)

const sampleTimeout = 5 * time.Second

// wakeResult is the wake latency of an idle runtime.
type wakeResult struct {
	lat   latencies
	early int // handler started before Enqueue returned (counted as 0)
}

// wake measures, on an idle runtime (Concurrency 4, default PollInterval),
// the time from Enqueue returning to the handler starting, one task at a
// time. Before each sample it waits until the previous task was processed
// and the runtime went idle again.
func (b *bench) wake(ctx context.Context, samples int) (wakeResult, error) {
	var res wakeResult
	p, err := b.pair("wake")
	if err != nil {
		return res, err
	}
	defer p.close()
	started := make(chan time.Time, 1)
	h := handlers.HandlerFunc(func(context.Context, *queue.TaskInfo) error {
		started <- time.Now()
		return nil
	})
	rt, err := otrt.New(p.rt, h, otrt.Config{Concurrency: 4, Logger: zap.NewNop()})
	if err != nil {
		return res, err
	}
	if err := rt.Start(ctx); err != nil {
		return res, err
	}
	defer shutdown(rt)
	warm := min(50, samples/10+1)
	for i := range warm + samples {
		if err := idle(ctx, rt, int64(i)); err != nil {
			return res, err
		}
		if _, err := p.prod.Enqueue(ctx, queue.NewTask("ping", nil)); err != nil {
			return res, err
		}
		ret := time.Now()
		select {
		case at := <-started:
			if i < warm {
				continue
			}
			d := at.Sub(ret)
			if d < 0 {
				res.early++
				d = 0
			}
			res.lat = append(res.lat, d)
		case <-time.After(sampleTimeout):
			return res, fmt.Errorf("sample %d: handler did not start within %v", i, sampleTimeout)
		}
	}
	return res, nil
}

// idle waits until rt processed n tasks, then lets the lease call that a
// finished task triggers complete, so the next sample starts idle.
func idle(ctx context.Context, rt *otrt.Runtime, n int64) error {
	deadline := time.Now().Add(sampleTimeout)
	for rt.Stats().Processed < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("runtime processed %d of %d tasks", rt.Stats().Processed, n)
		}
		if err := sleep(ctx, 100*time.Microsecond); err != nil {
			return err
		}
	}
	return sleep(ctx, 2*time.Millisecond)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// preemptResult is the preemption latency of a saturated runtime.
type preemptResult struct {
	lat   latencies
	early int
	stats otrt.RunStats
}

// preemption saturates a runtime of Concurrency 4 with long low tasks that
// save a 1 KiB checkpoint and return when cancelled, then enqueues one
// urgent task at a time and measures from Enqueue returning to the urgent
// handler starting. After each sample the victim resumes from its
// checkpoint; by default it then finishes and a fresh low task takes its
// place, so the runtime is saturated again. With resumeLong the resumed
// victim runs on instead, to be preempted again (see --resume-long). The
// policy allows unlimited preemptions per task.
func (b *bench) preemption(ctx context.Context, samples int, resumeLong bool) (preemptResult, error) {
	var res preemptResult
	p, err := b.pair("preempt")
	if err != nil {
		return res, err
	}
	defer p.close()
	const slots = 4
	lowStarted := make(chan struct{}, 16)
	resumed := make(chan struct{}, 16)
	urgentStarted := make(chan time.Time, 1)
	state := make([]byte, 1024)
	mux := handlers.NewMux()
	mux.HandleFunc("low", func(ctx context.Context, _ *queue.TaskInfo) error {
		if h, ok := ckpt.FromContext(ctx); ok && h.Resumed() && !resumeLong {
			resumed <- struct{}{}
			return nil
		}
		lowStarted <- struct{}{}
		<-ctx.Done()
		return errors.Join(context.Cause(ctx), checkpoint.Save(ctx, state))
	})
	mux.HandleFunc("urgent", func(context.Context, *queue.TaskInfo) error {
		urgentStarted <- time.Now()
		return nil
	})
	rt, err := otrt.New(p.rt, mux, otrt.Config{Concurrency: slots, Logger: zap.NewNop(),
		Preemption: preempt.Policy{MaxPreemptions: preempt.Unlimited}})
	if err != nil {
		return res, err
	}
	if err := rt.Start(ctx); err != nil {
		return res, err
	}
	defer shutdown(rt)
	// saturate enqueues k low tasks and waits until they run.
	saturate := func(k int) error {
		for range k {
			if _, err := p.prod.Enqueue(ctx, queue.NewTask("low", nil), queue.Level(0)); err != nil {
				return err
			}
		}
		return receive(lowStarted, k, "low task start")
	}
	if err := saturate(slots); err != nil {
		return res, err
	}
	warm := min(20, samples/10+1)
	for i := range warm + samples {
		if _, err := p.prod.Enqueue(ctx, queue.NewTask("urgent", nil), queue.Level(2)); err != nil {
			return res, err
		}
		ret := time.Now()
		select {
		case at := <-urgentStarted:
			if i >= warm {
				d := at.Sub(ret)
				if d < 0 {
					res.early++
					d = 0
				}
				res.lat = append(res.lat, d)
			}
		case <-time.After(sampleTimeout):
			return res, fmt.Errorf("sample %d: urgent task did not start within %v (stats %+v)",
				i, sampleTimeout, rt.Stats())
		}
		if resumeLong {
			err = receive(lowStarted, 1, "victim resume")
		} else if err = receive(resumed, 1, "victim resume"); err == nil {
			err = saturate(1)
		}
		if err != nil {
			return res, fmt.Errorf("sample %d: %w", i, err)
		}
	}
	res.stats = rt.Stats()
	return res, nil
}

// receive takes k signals from ch, each within sampleTimeout.
func receive[T any](ch <-chan T, k int, what string) error {
	for range k {
		select {
		case <-ch:
		case <-time.After(sampleTimeout):
			return fmt.Errorf("no %s within %v", what, sampleTimeout)
		}
	}
	return nil
}

// idleResult is what an idle runtime costs Redis.
type idleResult struct {
	window       time.Duration
	client       snapshot // commands through the runtime's client
	server       int64    // commands Redis ran from any client
	clientPerSec float64
	writesPerSec float64
	serverPerSec float64
}

// idleCost starts a runtime on an empty queue, lets it settle, then counts
// for window the round trips its client makes (hook), the writes on all its
// connections (Pub/Sub health-check PINGs included), and the commands Redis
// ran in all, those inside scripts included. Nothing else should use the
// server meanwhile.
func (b *bench) idleCost(ctx context.Context, window time.Duration) (idleResult, error) {
	res := idleResult{window: window}
	p, err := b.pair("idle")
	if err != nil {
		return res, err
	}
	defer p.close()
	h := handlers.HandlerFunc(func(context.Context, *queue.TaskInfo) error { return nil })
	rt, err := otrt.New(p.rt, h, otrt.Config{Logger: zap.NewNop()})
	if err != nil {
		return res, err
	}
	if err := rt.Start(ctx); err != nil {
		return res, err
	}
	defer shutdown(rt)
	if err := sleep(ctx, 500*time.Millisecond); err != nil {
		return res, err
	}
	s0, err := serverCommands(ctx, b.prod)
	if err != nil {
		return res, err
	}
	c0 := p.hook.snapshot()
	if err := sleep(ctx, window); err != nil {
		return res, err
	}
	c1 := p.hook.snapshot()
	s1, err := serverCommands(ctx, b.prod)
	if err != nil {
		return res, err
	}
	res.client = c1.sub(c0)
	res.server = s1 - s0 - 1 // the first INFO is counted in the second reading
	res.clientPerSec = float64(res.client.trips) / window.Seconds()
	res.writesPerSec = float64(res.client.writes) / window.Seconds()
	res.serverPerSec = float64(res.server) / window.Seconds()
	return res, nil
}
