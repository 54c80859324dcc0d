package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// enqueueManyScript is lua/enqueue_batch.lua: it stores a chunk of new
// tasks in one call.
var enqueueManyScript = script("enqueue_batch.lua")

// enqueueChunk is how many tasks one script call of EnqueueBatch stores.
var enqueueChunk = 256

// EnqueueBatch enqueues tasks with the same options for each, in one
// script call per 256 tasks, all sent in one pipeline. It returns the
// stored tasks in order; a task that failed leaves a nil entry, and the
// returned error joins every failure.
func (c *Store) EnqueueBatch(ctx context.Context, tasks []*Task, opts ...Option) ([]*Task, error) {
	return c.EnqueueEach(ctx, tasks, func(int) []Option { return opts })
}

// EnqueueEach is EnqueueBatch with options per task: opts(i) are those of
// tasks[i] (package queue passes a task's own options, then the call's).
func (c *Store) EnqueueEach(ctx context.Context, tasks []*Task, opts func(i int) []Option) ([]*Task, error) {
	if err := c.ready(ctx); err != nil {
		return make([]*Task, len(tasks)), err
	}
	out := make([]*Task, len(tasks))
	spans := make([]trace.Span, len(tasks))
	var errs []error
	type chunk struct {
		idx  []int
		args []any
		cmd  *redis.Cmd
	}
	var chunks []*chunk
	cur := &chunk{}
	for i, t := range tasks {
		nt, _, a, span, err := c.prepare(ctx, t, opts(i))
		if err != nil {
			errs = append(errs, fmt.Errorf("task %d: %w", i, err))
			continue
		}
		out[i], spans[i] = nt, span
		if len(cur.idx) == 0 {
			cur.args = []any{c.keys.prefix, a[3]}
		}
		// a is the single-task script's ARGV: prefix, id, mode, now, delay, level, prb, body.
		cur.idx = append(cur.idx, i)
		cur.args = append(cur.args, a[1], a[2], a[4], a[5], a[6], a[7])
		if len(cur.idx) == enqueueChunk {
			chunks, cur = append(chunks, cur), &chunk{}
		}
	}
	if len(cur.idx) > 0 {
		chunks = append(chunks, cur)
	}
	keys := []string{c.keys.leases()}
	// EVALSHA first; only the chunks that met a server without the script
	// (fresh or restarted Redis) run again, with EVAL: NOSCRIPT means the
	// chunk ran nothing, so no task is sent twice.
	var node pipeliner = c.rdb
	if c.cfg.WaitReplicas > 0 {
		node = c.writer(ctx)
	}
	var wait *redis.Cmd // WAIT after the chunks, on their connection (Config.WaitReplicas)
	exec := func(only func(ch *chunk) bool, useSha bool) {
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, ch := range chunks {
				if !only(ch) {
					continue
				}
				if useSha {
					ch.cmd = enqueueManyScript.EvalSha(ctx, p, keys, ch.args...)
				} else {
					ch.cmd = enqueueManyScript.Eval(ctx, p, keys, ch.args...)
				}
			}
			wait = c.waitCmd(ctx, p)
			return nil
		})
	}
	noScript := func(ch *chunk) bool { return redis.HasErrorPrefix(ch.cmd.Err(), "NOSCRIPT") }
	if len(chunks) > 0 {
		exec(func(*chunk) bool { return true }, true)
	}
	if slices.ContainsFunc(chunks, noScript) {
		exec(noScript, false)
	}
	unconfirmed := c.replicated(wait)
	for _, ch := range chunks {
		res, err := enqueueReplies(ch.cmd, len(ch.idx))
		for j, i := range ch.idx {
			var e error
			switch {
			case err != nil:
				e = fmt.Errorf("task %d (%s): %w", i, out[i].ID, scriptErr(err))
			case j >= len(res):
				e = fmt.Errorf("task %d (%s): short reply", i, out[i].ID)
			default:
				switch v := res[j].(type) {
				case int64:
					if v == 0 {
						e = fmt.Errorf("task %d: %w: %q", i, ErrDuplicateTask, out[i].ID)
					}
				case string:
					e = fmt.Errorf("task %d (%s): %w", i, out[i].ID, scriptErr(errors.New(v)))
				}
			}
			if e == nil && unconfirmed != nil {
				e = fmt.Errorf("task %d (%s): %w", i, out[i].ID, unconfirmed)
			}
			endEnqueue(spans[i], e)
			if e != nil {
				errs = append(errs, e)
				out[i] = nil
			}
		}
	}
	return out, errors.Join(errs...)
}

// enqueueReplies reads enqueueManyScript's reply for n tasks: one entry
// per task, 1 for each when the script answered n (all stored).
func enqueueReplies(cmd *redis.Cmd, n int) ([]any, error) {
	if all, err := cmd.Int64(); err == nil {
		if all != int64(n) {
			return nil, fmt.Errorf("overtake: enqueue: reply %d for %d tasks", all, n)
		}
		res := make([]any, n)
		for i := range res {
			res[i] = int64(1)
		}
		return res, nil
	}
	return cmd.Slice()
}
