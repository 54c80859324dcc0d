package queue

import (
	"context"
	"sync"
	"time"
)

// acker groups concurrent Acks into one script call (group commit): a
// caller that finds fewer than maxFlushers calls in flight sends every ack
// queued so far and keeps sending until the queue is empty; the others
// wait for their answer. A few calls may be in flight at once, so one slow
// call (Redis unreachable) does not hold every other ack behind it. Under load many tasks finish during one round trip, so a batch
// costs one call and a handful of Redis commands however large it is; a
// lone Ack is sent at once, with no added delay.
type acker struct {
	mu       sync.Mutex
	queued   []*ackWait
	flushing int
}

// maxFlushers bounds the ack calls in flight at once.
const maxFlushers = 4

type ackWait struct {
	op   finishOp
	done chan error
}

// maxAckBatch bounds one call's size, so one reply stays small.
const maxAckBatch = 256

// ackTimeout bounds a batch's call: it is not tied to one caller's context,
// since it carries the acks of others.
const ackTimeout = 5 * time.Second

func (a *acker) do(ctx context.Context, c *Client, op finishOp) error {
	w := &ackWait{op: op, done: make(chan error, 1)}
	a.mu.Lock()
	a.queued = append(a.queued, w)
	lead := a.flushing < maxFlushers
	if lead {
		a.flushing++
	}
	a.mu.Unlock()
	if lead {
		a.flush(ctx, c, w)
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		select {
		case err := <-w.done: // answered as ctx ended: the answer counts
			return err
		default:
		}
		return ctx.Err()
	}
}

// flush sends batches until none is queued. A caller flushing for its own
// ack (own) stops once that is answered: if more acks wait, a goroutine
// takes over its turn, so no Ack is held up by the acks of others.
func (a *acker) flush(ctx context.Context, c *Client, own *ackWait) {
	for {
		a.mu.Lock()
		if own != nil && len(own.done) > 0 && len(a.queued) > 0 {
			a.mu.Unlock()
			go a.flush(context.WithoutCancel(ctx), c, nil) // hand the turn over
			return
		}
		batch := a.queued
		if len(batch) > maxAckBatch {
			batch = batch[:maxAckBatch]
		}
		a.queued = a.queued[len(batch):]
		if len(batch) == 0 {
			a.flushing--
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		ops := make([]finishOp, len(batch))
		for i, w := range batch {
			ops[i] = w.op
		}
		deadline := time.Now().Add(ackTimeout)
		if dl, ok := ctx.Deadline(); ok && len(batch) == 1 {
			deadline = dl // a lone ack keeps its caller's deadline
		}
		bctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		errs := c.finishBatch(bctx, ops)
		cancel()
		for i, w := range batch {
			w.done <- errs[i]
		}
	}
}
