package runtime

import (
	"context"
	"sync"
	"sync/atomic"
)

// lifecycle is the runtime's own life from Start to the end of Shutdown:
// whether it started, the contexts the services and the runs derive from,
// the once-only shutdown and halt with their results, and what teardown
// undoes beside the services (the rejoins, the concurrency gauge).
type lifecycle struct {
	started atomic.Bool
	// base is the parent of runs and of the services' loops; never
	// cancelled by Run's ctx, only by teardown (stopAll).
	base    context.Context
	stopAll context.CancelFunc
	// runs is the parent of every run: Shutdown cancels it (cause
	// handlers.ErrShutdown) to tell every handler at once, those a lease
	// call still in flight starts included.
	runs     context.Context
	stopRuns context.CancelCauseFunc

	rejoins      sync.WaitGroup // the rejoins the preemption starts (giveway.go)
	unregisterCc func() error   // the concurrency gauge

	shutOnce sync.Once
	shutErr  error
	// halted is closed when the runtime must stop on its own (halt), with
	// haltErr, which Run returns.
	halted   chan struct{}
	haltOnce sync.Once
	haltErr  error
}

// newLifecycle returns the life of a runtime not yet started.
func newLifecycle() *lifecycle { return &lifecycle{halted: make(chan struct{})} }

// begin starts the life once: false if it had started. The contexts
// derive from ctx's values, not its end.
func (l *lifecycle) begin(ctx context.Context) bool {
	if !l.started.CompareAndSwap(false, true) {
		return false
	}
	l.base, l.stopAll = context.WithCancel(context.WithoutCancel(ctx))
	l.runs, l.stopRuns = context.WithCancelCause(l.base)
	return true
}

// abort undoes begin: Start failed, and may be called again.
func (l *lifecycle) abort() {
	l.stopAll()
	l.started.Store(false)
}

// halt records err as the reason the runtime stops on its own; true the
// first time, when the caller must shut the runtime down.
func (l *lifecycle) halt(err error) (first bool) {
	l.haltOnce.Do(func() {
		l.haltErr = err
		close(l.halted)
		first = true
	})
	return first
}

// haltedWith reports whether the runtime halted, and halt's error.
func (l *lifecycle) haltedWith() (halted bool, err error) {
	select {
	case <-l.halted:
		return true, l.haltErr
	default:
		return false, nil
	}
}

// shutdownOnce runs fn the first time and returns its result every time.
func (l *lifecycle) shutdownOnce(fn func() error) error {
	l.shutOnce.Do(func() { l.shutErr = fn() })
	return l.shutErr
}
