package runtime

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// ack records rn's success. Its slot is freed as soon as the ack is
// queued for the dispatcher's next lease call, not once the ack has
// landed: that lease runs the ack before it leases (one round trip ends a
// task and starts the next), so the worker's busy count in Redis never
// shows the slot free before it is. If the carried ack fails (Redis
// unreachable), the run takes its slot back, as if it had never been
// freed, and the ack is retried as any other transition
// (finishWithRetry).
func (c *completer) ack(rn *run) error {
	unsure := false // an attempt failed without an answer: it may have landed
	if wait, ok := c.slots.carryAck(rn); ok {
		err := wait(c.dispatched)
		if errors.Is(err, context.Canceled) && c.dispatched.Err() != nil {
			// The dispatcher stopped: no lease call will carry the ack.
			ctx, cancel := context.WithTimeout(context.Background(), c.q.Config().LeaseDuration)
			c.eng.FlushCarried(ctx)
			err = wait(ctx)
			cancel()
		}
		if answeredErr(err) {
			// The lease call or flush that carried it reached Redis: the
			// first call to do so after an outage ends it.
			c.redis.answered()
		}
		if err == nil || errors.Is(err, queue.ErrLeaseLost) {
			return err
		}
		if errors.Is(err, queue.ErrNotReplicated) {
			// Done on the primary, not confirmed by the replicas (a lost
			// replica, Config.WaitReplicas): sending it again would find
			// the lease gone, and Redis answered, so it is no outage.
			rn.log.Warn("the task's ack was not confirmed by the replicas", zap.Error(err))
			return nil
		}
		c.slots.retake(rn)          // counted busy again, like the lease Redis still counts
		if !store.SlotMoving(err) { // (finishWithRetry says that one once)
			rn.log.Warn("redis unavailable; retrying ack", zap.Error(err))
		}
		unsure = true
	}
	err := c.finishWithRetry(rn, "ack", func(tctx context.Context) error {
		err := c.eng.Ack(tctx, rn.t)
		unsure = unsure || (err != nil && !errors.Is(err, queue.ErrLeaseLost))
		return err
	})
	if unsure && errors.Is(err, queue.ErrLeaseLost) && c.acked(rn) {
		return nil // an earlier attempt landed; only its reply was lost
	}
	return err
}

// acked reports whether rn's task is done in Redis (or gone, acked without
// Retention): after an ack whose reply was lost, carried by a lease call or
// of its own, a retry finds the lease gone although that attempt landed.
// One Inspect, on that failure path only.
func (c *completer) acked(rn *run) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, err := c.q.Inspect(ctx, rn.t.ID)
	return errors.Is(err, queue.ErrTaskNotFound) || (err == nil && t.State == queue.StateDone)
}

// maxCarried is the most acks one lease call carries (queue's batch).
const maxCarried = 256

// releaseUnique releases the uniqueness lock of rn's task (queue.Unique)
// once it succeeded, so that an equal task may be enqueued at once; a
// task that is not unique costs nothing. If Redis does not answer, the
// lock stays until its time to live ends.
func (c *completer) releaseUnique(rn *run) {
	if rn.t.Headers[store.UniqueHeader] == "" {
		return
	}
	ctx, cancel := context.WithTimeout(c.base, c.q.Config().LeaseDuration)
	defer cancel()
	if err := c.eng.ReleaseUnique(ctx, rn.t); err != nil {
		rn.log.Warn("could not release the uniqueness lock; it lasts until its ttl ends", zap.Error(err))
	}
}
