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
// Redis: a lost, refused or silent connection. While an outage lasts only
// the dispatcher tries Redis, with one probe (a PING go-redis does not
// retry) per backoff; the heartbeat and the wake-up subscription wait for
// the outage to end. So a worker makes one connection attempt per
// backoff, however many loops it runs and whatever go-redis's MaxRetries,
// and every loop resumes as soon as one call succeeds.
type redisOutage struct {
	active atomic.Bool // an outage lasts (read without the lock)
	mu     sync.Mutex
	since  time.Time     // when the current outage began
	ended  chan struct{} // closed when the current or next outage ends
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

// down reports whether an outage lasts.
func (o *redisOutage) down() bool { return o.active.Load() }

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
		!errors.Is(err, context.Canceled)
}

// redisFailed records that a call to Redis failed with err, and reports
// whether err shows an outage. The dispatcher is woken when one begins: it
// probes until Redis answers.
func (r *Runtime) redisFailed(err error) bool {
	if !isOutage(err) || r.baseCtx.Err() != nil {
		return false
	}
	if r.outage.begin() {
		r.signal()
	}
	return true
}

// redisAnswered records that a call to Redis succeeded. If that ends an
// outage, the dispatcher looks for work at once: wake-ups published during
// the outage were lost.
func (r *Runtime) redisAnswered() {
	if d, ok := r.outage.end(); ok {
		r.log.Info("redis reachable again", zap.Duration("outage", d))
		r.lookNow()
	}
}

// lookNow makes the dispatcher look for work at once, as on its slow
// poll: urgent work of every level included, whatever its backoff.
func (r *Runtime) lookNow() {
	r.pollNow.Store(true)
	r.signal()
}

// onceCmd is a command that go-redis sends once, never retried on a new
// connection.
type onceCmd struct{ *redis.StatusCmd }

// NoRetry tells go-redis not to retry the command.
func (onceCmd) NoRetry() bool { return true }

// probe sends one PING in place of a lease call while an outage lasts: at
// most one connection attempt, where a lease call makes go-redis's
// MaxRetries+1. It counts as a lease call in flight, and leaves its
// error, or the end of the outage, for the dispatcher the same way.
func (r *Runtime) probe() {
	r.mu.Lock()
	r.leasing++
	r.mu.Unlock()
	r.leaseWG.Add(1)
	go func() {
		defer r.leaseWG.Done()
		ctx, cancel := context.WithTimeout(r.baseCtx, 5*time.Second)
		err := r.eng.Redis().Process(ctx, onceCmd{redis.NewStatusCmd(ctx, "ping")})
		cancel()
		if err == nil {
			r.redisAnswered()
		}
		r.mu.Lock()
		r.leasing--
		if err != nil && r.leaseOut.err == nil {
			r.leaseOut.err = err
		}
		r.mu.Unlock()
		select {
		case r.leaseDone <- struct{}{}:
		default:
		}
	}()
}
