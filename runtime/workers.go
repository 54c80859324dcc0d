package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/ants/v2"
	"go.uber.org/zap"
)

// workers runs the handlers: the ants pool, which exists only between
// Start and Shutdown (a runtime never started holds no goroutine), the
// handlers handed to it, and the runs whose slot was freed before their
// ack landed (ack.go), which wait in a pool goroutine without counting
// against the room for new handlers. Shutdown waits for what it tracks.
type workers struct {
	pool     *ants.Pool
	size     int            // Config.poolSize: handlers, victims winding down, stuck ones
	tasks    sync.WaitGroup // running handlers, and malformed records being dead-lettered
	handlers atomic.Int64   // goroutines handed to the pool and not yet returned
	early    atomic.Int64   // runs whose slot was freed before their ack landed
}

// start creates the pool: size goroutines plus extra for the early acks.
func (w *workers) start(size, extra int, log *zap.Logger) error {
	pool, err := ants.NewPool(size+extra, ants.WithNonblocking(false), ants.WithLogger(zapAntsLogger{log}))
	if err != nil {
		return fmt.Errorf("overtake: pool: %w", err)
	}
	w.pool, w.size = pool, size
	return nil
}

// release closes the pool, once every handler returned.
func (w *workers) release() { w.pool.Release() }

// submit hands fn, a run's handler, to the pool; fn calls done as it
// returns. An error means the pool is closed (a bug: it is closed only
// after every task returned).
func (w *workers) submit(fn func()) error {
	w.tasks.Add(1)
	w.handlers.Add(1)
	if err := w.pool.Submit(fn); err != nil {
		w.handlers.Add(-1)
		w.tasks.Done()
		return err
	}
	return nil
}

// done says a handler handed to the pool returned and settled.
func (w *workers) done() {
	w.handlers.Add(-1)
	w.tasks.Done()
}

// track runs fn on a goroutine of its own that Shutdown waits for, like a
// handler.
func (w *workers) track(fn func()) {
	w.tasks.Add(1)
	go func() {
		defer w.tasks.Done()
		fn()
	}()
}

// room is how many more handlers the pool can start without blocking,
// not counting the runs that only wait for their early ack: the pool has
// room of its own for those.
func (w *workers) room() int { return w.size - int(w.handlers.Load()-w.early.Load()) }

// wait waits for every handler to return; false if ctx ended first.
func (w *workers) wait(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { w.tasks.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// zapAntsLogger routes ants' messages to zap.
type zapAntsLogger struct{ l *zap.Logger }

func (z zapAntsLogger) Printf(format string, args ...any) {
	z.l.Warn(fmt.Sprintf(format, args...))
}
