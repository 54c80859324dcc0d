package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// enqueuer groups concurrent Enqueue calls into one script call (group
// commit, as acker does for acks): a caller that finds fewer than
// maxFlushers calls in flight sends every enqueue queued so far, as one
// enqueueManyScript call, and keeps sending until the queue is empty; the
// others wait for their answer. A lone Enqueue is sent at once with the
// single-task script, with no added delay; under concurrency many tasks
// share one call, which costs Redis less per task and lifts throughput
// past one script call per task.
type enqueuer struct {
	mu       sync.Mutex
	queued   []*enqWait
	flushing int
}

// maxEnqueueBatch bounds one grouped call (EnqueueBatch's chunk size).
const maxEnqueueBatch = 256

type enqWait struct {
	nt   *Task
	keys []string // the single-task script's keys
	args []any    // the single-task script's ARGV
	done chan error
}

func (e *enqueuer) do(ctx context.Context, c *Client, w *enqWait) error {
	e.mu.Lock()
	e.queued = append(e.queued, w)
	lead := e.flushing < maxFlushers
	if lead {
		e.flushing++
	}
	e.mu.Unlock()
	if lead {
		e.flush(ctx, c, w)
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
		// The call may still store the task: like any write whose answer
		// is lost, retry with the same ID (ErrDuplicateTask means stored).
		return ctx.Err()
	}
}

// flush sends batches until none is queued; a caller flushing for its own
// enqueue hands the turn to a goroutine once it is answered.
func (e *enqueuer) flush(ctx context.Context, c *Client, own *enqWait) {
	for {
		e.mu.Lock()
		if own != nil && len(own.done) > 0 && len(e.queued) > 0 {
			e.mu.Unlock()
			go e.flush(context.WithoutCancel(ctx), c, nil)
			return
		}
		batch := e.queued
		if len(batch) > maxEnqueueBatch {
			batch = batch[:maxEnqueueBatch]
		}
		e.queued = e.queued[len(batch):]
		if len(batch) == 0 {
			e.flushing--
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
		deadline := time.Now().Add(ackTimeout)
		if dl, ok := ctx.Deadline(); ok && len(batch) == 1 {
			deadline = dl // a lone enqueue keeps its caller's deadline
		}
		bctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		if len(batch) == 1 {
			batch[0].done <- c.enqueueOne(bctx, batch[0])
		} else {
			errs := c.enqueueMany(bctx, batch)
			for i, w := range batch {
				w.done <- errs[i]
			}
		}
		cancel()
	}
}

// enqueueOne stores one task with the single-task script.
func (c *Client) enqueueOne(ctx context.Context, w *enqWait) error {
	n, err := enqueueScript.Run(ctx, c.rdb, w.keys, w.args...).Int()
	if err != nil {
		return wrapf(scriptErr(err), "enqueue %s", w.nt.ID)
	}
	if n == 0 {
		return fmt.Errorf("%w: %q", ErrDuplicateTask, w.nt.ID)
	}
	return nil
}

// enqueueMany stores a batch with one enqueueManyScript call and returns
// each task's error.
func (c *Client) enqueueMany(ctx context.Context, batch []*enqWait) []error {
	// w.args is the single-task script's ARGV: prefix, id, mode, now,
	// delay, level, prb, body.
	args := make([]any, 0, 2+6*len(batch))
	args = append(args, c.keys.prefix, batch[0].args[3])
	for _, w := range batch {
		a := w.args
		args = append(args, a[1], a[2], a[4], a[5], a[6], a[7])
	}
	errs := make([]error, len(batch))
	res, err := enqueueManyScript.Run(ctx, c.rdb, []string{c.keys.leases()}, args...).Slice()
	for i, w := range batch {
		switch {
		case err != nil:
			errs[i] = wrapf(scriptErr(err), "enqueue %s", w.nt.ID)
		case i >= len(res):
			errs[i] = fmt.Errorf("overtake: enqueue %s: short reply", w.nt.ID)
		default:
			switch v := res[i].(type) {
			case int64:
				if v == 0 {
					errs[i] = fmt.Errorf("%w: %q", ErrDuplicateTask, w.nt.ID)
				}
			case string:
				errs[i] = wrapf(scriptErr(errors.New(v)), "enqueue %s", w.nt.ID)
			}
		}
	}
	return errs
}
