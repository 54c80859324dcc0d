package store

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"
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

// enqWait is one Enqueue waiting for its grouped call: the task prepare
// made and what its script call needs, which enqueueCall (the single-task
// script) or batchCall.add (a share of a grouped call) turns into KEYS and
// ARGV only once the call is known.
type enqWait struct {
	nt       Task       // the task as stored, returned to the caller
	span     trace.Span // its producer span
	id, body any        // nt.ID and the record's body, each boxed once for the ARGV
	now      int64      // the client's clock at prepare, ms (the scripts' now)
	delay    int64      // ms until due, for a scheduled task
}

// enqueueGroup stores a batch of enqueues: alone with the single-task
// script, else in one enqueueManyScript call.
func (c *Store) enqueueGroup(ctx context.Context, batch []*enqWait) []error {
	if len(batch) == 1 {
		return []error{c.enqueueOne(ctx, batch[0])}
	}
	return c.enqueueMany(ctx, batch)
}

// enqueueOne stores one task with the single-task script.
func (c *Store) enqueueOne(ctx context.Context, w *enqWait) error {
	ks, args := c.enqueueCall(w)
	n, err := c.run(ctx, enqueueScript, ks, args...).Int()
	if err != nil {
		return wrapf(scriptErr(err), "enqueue %s", w.nt.ID)
	}
	if n != 1 {
		return refused(int64(n), &w.nt)
	}
	return nil
}

// enqueueMany stores a batch with one script call (chunkCall) and returns
// each task's error.
func (c *Store) enqueueMany(ctx context.Context, batch []*enqWait) []error {
	call, order := c.chunkCall(batch[0].now, len(batch), func(i int) *enqWait { return batch[i] })
	errs := make([]error, len(batch))
	cmd := c.run(ctx, call.script, call.keys, call.args...)
	var unconfirmed error // stored on the primary, not confirmed (Config.WaitReplicas)
	if errors.Is(cmd.Err(), ErrNotReplicated) {
		unconfirmed = cmd.Err()
		cmd.SetErr(nil)
	}
	res, err := enqueueReplies(cmd, len(batch))
	for j := range batch { // the call's j-th task, the reply's j-th entry
		i := j // its place in batch
		if order != nil {
			i = order[j]
		}
		w := batch[i]
		switch {
		case err != nil:
			errs[i] = wrapf(scriptErr(err), "enqueue %s", w.nt.ID)
		case j >= len(res):
			errs[i] = fmt.Errorf("overtake: enqueue %s: short reply", w.nt.ID)
		default:
			switch v := res[j].(type) {
			case int64:
				if v != 1 {
					errs[i] = refused(v, &w.nt)
				} else if unconfirmed != nil {
					errs[i] = wrapf(unconfirmed, "enqueue %s", w.nt.ID)
				}
			case string:
				errs[i] = wrapf(scriptErr(errors.New(v)), "enqueue %s", w.nt.ID)
			}
		}
	}
	return errs
}
