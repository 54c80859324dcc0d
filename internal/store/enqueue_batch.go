package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

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
//
// On a queue of several shards, the tasks whose IDs it made and whose
// shard's master could not be reached (unsent, as in Enqueue) are
// enqueued again under new IDs in the shards that answered.
func (c *Store) EnqueueEach(ctx context.Context, tasks []*Task, opts func(i int) []Option) ([]*Task, error) {
	if err := c.ready(ctx); err != nil {
		return make([]*Task, len(tasks)), err
	}
	out := make([]*Task, len(tasks))
	spans := make([]trace.Span, len(tasks))
	errAt := make([]error, len(tasks))
	ws := make([]*enqWait, len(tasks))
	all := make([]int, len(tasks))
	for i := range all {
		all[i] = i
	}
	c.enqueueSome(ctx, all, tasks, opts, ws, out, spans, errAt)
	var avoid []bool
	for again := all; len(again) > 0; {
		first := avoid == nil
		again = again[:0:0]
		for i, e := range errAt {
			if e != nil && ws[i] != nil && c.elsewhere(ws[i], e, &avoid) {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			break
		}
		if first {
			prev := opts
			opts = func(i int) []Option { return append(slices.Clip(prev(i)), avoidShards(avoid)) }
		}
		c.enqueueSome(ctx, again, tasks, opts, ws, out, spans, errAt)
	}
	var errs []error
	for _, e := range errAt {
		if e != nil {
			errs = append(errs, e)
		}
	}
	return out, errors.Join(errs...)
}

// enqueueSome prepares tasks[i] for every i in idx and writes them, per
// shard at once, setting ws[i], out[i] (nil when not stored), spans[i]
// and errAt[i].
func (c *Store) enqueueSome(ctx context.Context, idx []int, tasks []*Task, opts func(i int) []Option,
	ws []*enqWait, out []*Task, spans []trace.Span, errAt []error) {
	by := make(map[*Store][]int, len(c.Shards()))
	for _, i := range idx {
		out[i], spans[i], ws[i], errAt[i] = nil, nil, nil, nil
		w, err := c.prepare(ctx, tasks[i], opts(i))
		if err == nil && w.nt.schedule != "" {
			err = fmt.Errorf("%w: a periodic tick is enqueued alone, not in a batch", ErrInvalidTask)
			endEnqueue(w.span, err)
		}
		if err != nil {
			errAt[i] = fmt.Errorf("task %d: %w", i, err)
			continue
		}
		out[i], spans[i], ws[i] = &w.nt, w.span, w
		s := c.shardOf(w.nt.ID)
		by[s] = append(by[s], i)
	}
	if len(by) == 1 {
		for s, idx := range by {
			s.writeBatch(ctx, idx, ws, out, spans, errAt)
		}
		return
	}
	var wg sync.WaitGroup
	for s, idx := range by {
		wg.Go(func() { s.writeBatch(ctx, idx, ws, out, spans, errAt) }) // each its own indexes
	}
	wg.Wait()
}

// writeBatch writes the prepared tasks ws[i] of every i in idx, all of c's
// shard, in one script call per 256 tasks, all sent in one pipeline; it
// ends their spans and sets errAt[i] to each task's error, and out[i] to
// nil for each task not stored.
func (c *Store) writeBatch(ctx context.Context, idx []int, ws []*enqWait, out []*Task, spans []trace.Span, errAt []error) {
	type chunk struct {
		idx  []int // the tasks, in the call's order (its reply's)
		call batchCall
		cmd  *redis.Cmd
	}
	var chunks []*chunk
	for len(idx) > 0 {
		n := min(len(idx), enqueueChunk)
		ch := &chunk{idx: idx[:n:n]}
		var order []int
		ch.call, order = c.chunkCall(ws[ch.idx[0]].now, n, func(j int) *enqWait { return ws[ch.idx[j]] })
		if order != nil {
			in := ch.idx
			ch.idx = make([]int, n)
			for j, k := range order {
				ch.idx[j] = in[k]
			}
		}
		chunks, idx = append(chunks, ch), idx[n:]
	}
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
					ch.cmd = ch.call.script.EvalSha(ctx, p, ch.call.keys, ch.call.args...)
				} else {
					ch.cmd = ch.call.script.Eval(ctx, p, ch.call.keys, ch.call.args...)
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
					if v != 1 {
						e = fmt.Errorf("task %d: %w", i, refused(v, out[i]))
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
				errAt[i] = e
				out[i] = nil
			}
		}
	}
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

// batchCall is one script call of a chunk of tasks as it is built: an
// enqueuePendingScript call (newPendingCall), or an enqueueManyScript
// call (lua/enqueue_batch.lua): KEYS every level's list, then each task's
// keys, then, when a task is scheduled, scheduled and n (close adds
// them); ARGV the prefix, now and the number of levels, then eight per
// task.
type batchCall struct {
	script *redis.Script
	keys   []string
	args   []any
	sched  bool // a task is scheduled
}

// newBatchCall opens an enqueueManyScript call for about n tasks, the
// first prepared at now (ms, the client's clock).
func (c *Store) newBatchCall(now int64, n int) batchCall {
	b := batchCall{script: enqueueManyScript, keys: make([]string, 0, len(c.sk.pending)+2*n+2), args: make([]any, 0, 3+8*n)}
	b.keys = append(b.keys, c.sk.pending...)
	b.args = append(b.args, c.sk.prefix, c.nowArg(now), c.cfg.Levels)
	return b
}

// add appends w's keys and ARGV: keys t:<id>, s:<id> of a scheduled task
// (a pending one never writes it), the lock of a unique task and res:<id>
// of a task whose ID was the caller's; ARGV id, mode, delay, level,
// preemptible, body, the lock's time to live and "1" when res:<id> is
// among the keys ("0" else).
func (b *batchCall) add(c *Store, w *enqWait) {
	nt := &w.nt
	b.keys = append(b.keys, c.keys.task(nt.ID))
	var mode any = "p" // an any set from constants: no allocation
	if nt.State == StateScheduled {
		mode, b.sched = "s", true
		b.keys = append(b.keys, c.keys.state(nt.ID))
	}
	var ttl any = 0
	if nt.unique > 0 {
		b.keys, ttl = append(b.keys, c.keys.unique(nt.Headers[UniqueHeader])), nt.unique.Milliseconds()
	}
	var declared any = "0"
	if nt.clearResult {
		b.keys, declared = append(b.keys, c.keys.result(nt.ID)), "1"
	}
	b.args = append(b.args, w.id, mode, w.delay, nt.Level, preemptible(nt), w.body, ttl, declared)
}

// close ends the KEYS once every task was added: scheduled and n last
// when a task is scheduled, which only a scheduled task touches. It
// returns the KEYS.
func (b *batchCall) close(c *Store) []string {
	if b.sched {
		b.keys, b.sched = append(b.keys, c.sk.scheduledCounts...), false
	}
	return b.keys
}

// refused is the error of an enqueue script's reply v for task t: 0 the
// ID exists, 2 an equal task holds the uniqueness lock, 3 the periodic
// tick was decided already.
func refused(v int64, t *Task) error {
	switch v {
	case 0:
		return fmt.Errorf("%w: task ID %q already exists", ErrDuplicateTask, t.ID)
	case 2:
		return fmt.Errorf("%w: an equal task (type %q, same payload) holds the uniqueness lock (Unique) until it "+
			"succeeds or the lock's ttl ends", ErrDuplicateTask, t.Type)
	case 3:
		return fmt.Errorf("%w: %s", ErrTickTaken, t.ID)
	}
	return fmt.Errorf("overtake: enqueue %s: unexpected reply %d", t.ID, v)
}
