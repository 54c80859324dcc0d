package queue

import (
	"context"
	"errors"
	"fmt"
)

// Concurrent Enqueue calls share script calls (groupCommit): a lone call
// is sent at once with the single-task script, a batch as one
// enqueueManyScript call, which costs Redis less per task and lifts
// throughput past one script call per task.

// maxAckBatch and maxEnqueueBatch bound one grouped call, so one reply
// stays small (EnqueueBatch's chunk size for enqueues).
const (
	maxAckBatch     = 256
	maxEnqueueBatch = 256
)

// enqWait is one Enqueue waiting for its grouped call.
type enqWait struct {
	nt   *Task
	keys []string // the single-task script's keys
	args []any    // the single-task script's ARGV
}

// enqueueGroup stores a batch of enqueues: alone with the single-task
// script, else in one enqueueManyScript call.
func (c *Client) enqueueGroup(ctx context.Context, batch []*enqWait) []error {
	if len(batch) == 1 {
		return []error{c.enqueueOne(ctx, batch[0])}
	}
	return c.enqueueMany(ctx, batch)
}

// enqueueOne stores one task with the single-task script.
func (c *Client) enqueueOne(ctx context.Context, w *enqWait) error {
	n, err := c.runWrite(ctx, enqueueScript, w.keys, w.args...).Int()
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
	res, err := enqueueReplies(c.runWrite(ctx, enqueueManyScript, []string{c.keys.leases()}, args...), len(batch))
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
