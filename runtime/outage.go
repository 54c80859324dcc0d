package runtime

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/queue"
)

// redisOutage says whether this worker's calls to Redis fail for want of
// Redis: a lost, refused or silent connection. While an outage lasts the
// dispatcher tries Redis with one probe (one dial and a PING) per
// backoff; the heartbeat, the wake-up subscription, the transitions of
// tasks that end meanwhile and the periodic schedules wait for the outage
// to end, the autoscaler reads nothing. So a worker makes one connection
// attempt per backoff, however many loops it runs and whatever go-redis's
// MaxRetries and DialerRetries.
// Any call that succeeds ends the outage, whichever loop made it, and
// every loop resumes at once (redisWatch.called).
//
// A failure of a call sent before another call succeeded is stale: the
// call may have gone out on a connection of the outage that just ended, so
// it neither begins an outage nor makes the dispatcher back off.
type redisOutage struct {
	active   atomic.Bool  // an outage lasts (read without the lock)
	answered atomic.Int64 // when a call last succeeded (UnixNano)
	mu       sync.Mutex
	since    time.Time     // when the current outage began
	ended    chan struct{} // closed when the current or next outage ends
}

// begin records a failure that shows an outage; true if one just began.
func (o *redisOutage) begin() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.active.Load() {
		return false
	}
	o.since = time.Now()
	o.active.Store(true)
	return true
}

// end records a call that succeeded. It returns how long the outage that
// this ends lasted, and false if none lasted.
func (o *redisOutage) end() (time.Duration, bool) {
	o.answered.Store(time.Now().UnixNano())
	if !o.active.Load() {
		return 0, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.active.Load() {
		return 0, false
	}
	o.active.Store(false)
	if o.ended != nil {
		close(o.ended)
		o.ended = nil
	}
	return time.Since(o.since), true
}

// elapsed returns how long the current outage has lasted, 0 if none
// lasts.
func (o *redisOutage) elapsed() time.Duration {
	if !o.active.Load() {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return time.Since(o.since)
}

// down reports whether an outage lasts.
func (o *redisOutage) down() bool { return o.active.Load() }

// answeredSince reports whether a call succeeded after sent.
func (o *redisOutage) answeredSince(sent time.Time) bool {
	return o.answered.Load() > sent.UnixNano()
}

// endedCh returns a channel closed when the current outage ends, or the
// next one if none lasts.
func (o *redisOutage) endedCh() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended == nil {
		o.ended = make(chan struct{})
	}
	return o.ended
}

// isOutage reports whether err, from a call to Redis, shows that Redis
// cannot be reached. An error Redis replied (a script's, NOPERM, OOM,
// LOADING) does not: the connection works and needs no probe, and the
// caller backs off by itself. Corrupt or foreign data, a lost lease or a
// cancelled call do not either.
func isOutage(err error) bool {
	var reply redis.Error
	return err != nil && !errors.As(err, &reply) && !errors.Is(err, queue.ErrCorrupt) &&
		!errors.Is(err, queue.ErrSchema) && !errors.Is(err, queue.ErrShapeMismatch) && !errors.Is(err, queue.ErrLeaseLost) &&
		!errors.Is(err, queue.ErrNotReplicated) && // done on the primary: Redis answered
		!errors.Is(err, context.Canceled)
}

// answeredErr reports whether err, from a call to Redis, shows that the
// call's script ran: Redis answered, and the call is as good as a success
// for telling whether Redis can be reached. An error reply of Redis itself
// (LOADING, NOPERM, OOM) does not end an outage: Redis does not serve yet.
func answeredErr(err error) bool {
	return err == nil || errors.Is(err, queue.ErrLeaseLost) || errors.Is(err, queue.ErrCorrupt) ||
		errors.Is(err, queue.ErrSchema) || errors.Is(err, queue.ErrNotReplicated) ||
		errors.Is(err, queue.ErrShapeMismatch)
}

// redisWatch is the worker's one view of whether Redis answers: the
// outage every service consults before a call, and what a call showed
// (called, answered, failed). It wakes the dispatcher when an outage
// begins (it probes) and when one ends (wake-ups were lost), through
// hooks the runtime gives it; no service needs more of another to know
// whether Redis answers.
type redisWatch struct {
	redisOutage
	log *zap.Logger
	// ctx is the runtime's base context, set by Start: once it ends no
	// failure begins an outage.
	ctx context.Context
	// onDown runs when an outage begins, onBack when one ends.
	onDown, onBack func()
}

// stopped reports whether the runtime stopped.
func (w *redisWatch) stopped() bool { return w.ctx != nil && w.ctx.Err() != nil }

// failed records that a call to Redis failed with err, and reports
// whether err shows an outage. The dispatcher is woken when one begins: it
// probes until Redis answers.
func (w *redisWatch) failed(err error) bool {
	if !isOutage(err) || w.stopped() {
		return false
	}
	if w.begin() {
		w.onDown()
	}
	return true
}

// answered records that a call to Redis succeeded. If that ends an
// outage, the dispatcher looks for work at once: wake-ups published during
// the outage were lost.
func (w *redisWatch) answered() {
	if d, ok := w.end(); ok {
		w.log.Info("redis reachable again", zap.Duration("outage", d))
		w.onBack()
	}
}

// called records what a call to Redis sent at sent showed, whichever
// service made it: any call that Redis answered ends an outage, so that
// every service resumes with the first (an ack's retry as well as the
// dispatcher's probe). It reports whether err is a stale failure: one that
// shows an outage, of a call sent before another succeeded. Such a call
// may have gone out on a connection of the outage that just ended; it
// begins none, and its caller tries again without backing off.
func (w *redisWatch) called(err error, sent time.Time) (stale bool) {
	switch {
	case answeredErr(err):
		w.answered()
	case isOutage(err) && w.answeredSince(sent):
		return true
	default:
		w.failed(err)
	}
	return false
}

// awaitProbe waits, while an outage lasts and the dispatcher probes,
// until the probe finds Redis again, but not past bound: a call made
// meanwhile would only add connection attempts (go-redis's, up to its
// DialerRetries each) to the probe's one. It reports whether it waited;
// not once the dispatcher stopped (probing ended; a handler that outlived
// Shutdown): then nothing probes, and the caller tries on its own backoff.
func (w *redisWatch) awaitProbe(probing context.Context, bound time.Time) bool {
	ended := w.endedCh() // before down(): closed if it ends after
	if !w.down() || probing.Err() != nil {
		return false
	}
	timer := time.NewTimer(time.Until(bound))
	defer timer.Stop()
	select {
	case <-ended:
	case <-timer.C:
	case <-probing.Done():
	}
	return true
}

// waitRedis waits for d and then for the end of any outage; false if the
// runtime stopped meanwhile. The whole of d, even if an outage ends first:
// a subscription whose own failure began the outage (a connection closed
// on SUBSCRIBE while commands get through) would otherwise come back at
// every probe that ends it, with no backoff between. After a real outage
// d is short: the subscription failed once, as it began.
func (w *redisWatch) waitRedis(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
	}
	for w.down() {
		select {
		case <-ctx.Done():
			return false
		case <-w.endedCh():
		}
	}
	return true
}

// onceCmd is a command that go-redis sends once, never retried on a new
// connection.
type onceCmd struct{ *redis.StatusCmd }

// NoRetry tells go-redis not to retry the command.
func (onceCmd) NoRetry() bool { return true }
