package runtime

import (
	"context"
	"sync"
)

// The runtime is a few services, each a type that owns its state and its
// goroutines, with one start and one stop (see docs/design.md, "The
// worker's services"):
//
//   - dispatcher (dispatcher.go, dispatch.go, lease.go, leaser.go,
//     reclaim.go, pause.go): leases into free slots, probes Redis while
//     it is down, reclaims borrowed slots, applies pauses.
//   - completer (settle.go, ack.go): records the runs' outcomes.
//   - preemptor (victim.go, deference.go): chooses victims and reserves
//     urgent work; the victim gives way in giveway.go.
//   - heartbeater (heartbeat.go): the worker record; extends every lease.
//   - scheduler (periodic.go): enqueues Config.Periodic's ticks.
//   - autoscaler (pool_autoscale.go): moves the pools' sizes.
//   - wakeListener (wake.go): the wake-up subscription and its check.
//
// What they share is owned by one type each: the slots (slots.go,
// slots_runs.go: every run held and the slots they take, under one lock),
// the ants pool (workers.go), Redis's reachability (redisWatch,
// outage.go) and the outcome counts (rates.go). Services reach the rest
// through a narrow interface (leaseHolder, poolSizer, ackSlots,
// victimSlots, waker, runner) that a test can stand in for; Runtime
// (runtime.go, run.go, shutdown.go) composes them and runs the handlers.

// startStop is the one start and one stop of a service: start runs the
// service's loops on goroutines of their own, under a context that stop
// cancels; stop then waits for them. Stopping twice, or a service never
// started, is safe.
type startStop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start runs each of loops on a goroutine of its own, with a context
// derived from ctx that stop cancels.
func (s *startStop) start(ctx context.Context, loops ...func(context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(len(loops))
	for _, loop := range loops {
		go func() {
			defer s.wg.Done()
			loop(ctx)
		}()
	}
}

// stop cancels the loops' context and waits for them to return.
func (s *startStop) stop() {
	s.mu.Lock()
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
}
