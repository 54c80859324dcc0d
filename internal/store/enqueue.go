package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// enqueueScript is lua/enqueue.lua: it stores a new task record and makes
// it pending or scheduled.
var enqueueScript = script("enqueue.lua")

// Enqueue stores t and makes it pending at its level (or scheduled, with
// ProcessAt/ProcessIn). It returns the stored task, with its ID.
//
// Enqueue records the producer span "enqueue <queue>/<type>" (a child of the span
// in ctx) with Config.TracerProvider and stores its trace context in the
// record's Headers, so every run of the task joins the producer's trace.
//
// On a queue of several shards, a task whose ID Enqueue made (no caller's
// ID, no unique lock or schedule tying it to a shard) and whose shard's
// master could not be reached (the call never left: unsent) is enqueued
// in another shard, under a new ID; with the caller's ID the error is
// returned.
func (c *Store) Enqueue(ctx context.Context, t *Task, opts ...Option) (*Task, error) {
	var avoid []bool
	for {
		w, err := c.enqueue(ctx, t, opts)
		if err == nil {
			return &w.nt, nil
		}
		first := avoid == nil
		if w == nil || !c.elsewhere(w, err, &avoid) {
			return nil, err
		}
		if first {
			opts = append(slices.Clip(opts), avoidShards(avoid)) // the same slice, marked each try
		}
	}
}

// enqueue is one try of Enqueue: the enqWait it made (nil when t or opts
// are invalid) and the error.
func (c *Store) enqueue(ctx context.Context, t *Task, opts []Option) (_ *enqWait, err error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	w, err := c.prepare(ctx, t, opts)
	if err != nil {
		return nil, err
	}
	defer func() { endEnqueue(w.span, err) }()
	s := c.shardOf(w.nt.ID)
	if w.nt.schedule != "" {
		err = s.enqueueOne(ctx, w) // a tick goes alone (enqueue_batch.lua has none)
	} else {
		err = s.enqs.do(ctx, w)
	}
	if err != nil {
		return w, err
	}
	c.touch(w.nt.ID)
	return w, nil
}

// elsewhere reports whether w, whose enqueue failed with err, may be
// enqueued again in another shard: its ID was made here and ties it to no
// shard, its call never reached its master (unsent), and a shard is left
// that did not refuse it; it adds w's shard to avoid and ends that shard's
// run of made IDs (fillLeave).
func (c *Store) elsewhere(w *enqWait, err error, avoid *[]bool) bool {
	if !c.sharded() || w.nt.clearResult || c.home(&w.nt) >= 0 || !unsent(err) {
		return false
	}
	if *avoid == nil {
		*avoid = make([]bool, len(c.shards))
	}
	k := shardIndex(w.nt.ID, len(c.shards))
	(*avoid)[k] = true
	c.fillLeave(k)
	return slices.Contains(*avoid, false)
}

// avoidShards is the Option of Enqueue's next try: a made ID must not
// hash to the shards avoid names.
func avoidShards(avoid []bool) Option {
	return func(_ *Store, t *Task) error {
		t.avoid = avoid
		return nil
	}
}

// unsent reports whether err says a call never reached Redis: its
// connection could not be made, or Redis Cluster refused the slot
// before running anything (CLUSTERDOWN).
func unsent(err error) bool {
	var op *net.OpError
	return (errors.As(err, &op) && op.Op == "dial") || redis.HasErrorPrefix(err, "CLUSTERDOWN")
}

// prepare validates t, applies opts to a copy (the returned enqWait's nt),
// starts its producer span (whose trace context goes into the copy's
// Headers) and encodes its record. The caller ends the span once the
// record is written; on error no span was started.
func (c *Store) prepare(ctx context.Context, t *Task, opts []Option) (*enqWait, error) {
	if t == nil || t.Type == "" {
		return nil, fmt.Errorf("%w: a task needs a type", ErrInvalidTask)
	}
	w := &enqWait{nt: *t}
	nt := &w.nt
	if err := c.resolve(nt, opts); err != nil {
		return nil, err
	}
	nt.clearResult = nt.ID != "" // a generated ID has no earlier result
	if err := c.assignID(nt); err != nil {
		return nil, err
	}
	if nt.ID == anchorMember {
		return nil, fmt.Errorf("%w: the ID %q is reserved", ErrInvalidTask, nt.ID)
	}
	_, w.span = c.startEnqueue(ctx, nt)
	if nt.unique > 0 { // nt.Headers is startEnqueue's copy, or nil
		if nt.Headers == nil {
			nt.Headers = make(map[string]string, 1)
		}
		nt.Headers[UniqueHeader] = uniqueDigest(nt.Type, nt.Payload)
	}
	now := c.now()
	state := StatePending
	if nt.ProcessAt.After(now) {
		state, w.delay = StateScheduled, nt.ProcessAt.Sub(now).Milliseconds()
		c.shardOf(nt.ID).sweep.at(nt.ProcessAt)
	} else {
		nt.ProcessAt = now
	}
	body, err := encodeBody(nt)
	if err != nil {
		endEnqueue(w.span, err)
		return nil, err
	}
	nt.State, nt.EnqueuedAt, nt.ReadyAt, nt.OriginalLevel, nt.AgedAt = state, now, now, nt.Level, time.Time{}
	w.id, w.body, w.now = nt.ID, body, now.UnixMilli()
	return w, nil
}

// Check reports whether Enqueue would accept t with opts: its options
// resolved against the queue's levels and classes, its retries, timeout
// and payload within bounds. It writes nothing and calls no server.
func (c *Store) Check(t *Task, opts ...Option) error {
	if t == nil || t.Type == "" {
		return fmt.Errorf("%w: a task needs a type", ErrInvalidTask)
	}
	nt := *t
	return c.resolve(&nt, opts)
}

// resolve applies opts to nt and checks what the queue's config bounds.
func (c *Store) resolve(nt *Task, opts []Option) error {
	for _, o := range opts {
		if err := o(c, nt); err != nil {
			return err
		}
	}
	if nt.MaxRetries < 0 || nt.Timeout < 0 {
		return fmt.Errorf("%w: negative MaxRetries %d or Timeout %v",
			ErrInvalidTask, nt.MaxRetries, nt.Timeout)
	}
	if nt.Level < 0 || nt.Level >= c.cfg.Levels {
		return fmt.Errorf("%w: %d is outside 0..%d", ErrInvalidLevel, nt.Level, c.cfg.Levels-1)
	}
	if limit := c.cfg.MaxPayloadBytes; limit >= 0 && len(nt.Payload) > limit {
		return fmt.Errorf("%w: %d bytes, over the queue's MaxPayloadBytes of %d", ErrPayloadTooLarge, len(nt.Payload), limit)
	}
	return nil
}

// enqueueCall returns the KEYS and ARGV of enqueue.lua for w: only the
// keys the script can touch for that task, so a pending task declares
// neither its state s:<id> nor the counts, which only a scheduled one
// writes.
func (c *Store) enqueueCall(w *enqWait) ([]string, []any) {
	nt := &w.nt
	ks := make([]string, 0, 7)
	ks = append(ks, c.keys.task(nt.ID))
	var mode any = "p"
	if nt.State == StateScheduled {
		mode = "s"
		ks = append(ks, c.sk.scheduledCounts[0], c.keys.state(nt.ID), c.sk.scheduledCounts[1])
	} else {
		ks = append(ks, c.sk.pending[nt.Level])
	}
	args := make([]any, 0, 9)
	args = append(args, c.sk.prefix, w.id, mode, c.nowArg(w.now), w.delay, nt.Level, preemptible(nt), w.body)
	switch {
	case nt.unique > 0 && nt.schedule != "":
		ks = append(ks, c.keys.unique(nt.Headers[UniqueHeader]), c.keys.periodic(nt.schedule))
		args = append(args, fmt.Sprintf(`{"u":%d,%s}`, nt.unique.Milliseconds(), tickArg(nt)))
	case nt.unique > 0:
		ks = append(ks, c.keys.unique(nt.Headers[UniqueHeader]))
		args = append(args, fmt.Sprintf(`{"u":%d}`, nt.unique.Milliseconds()))
	case nt.schedule != "":
		ks = append(ks, c.keys.periodic(nt.schedule))
		args = append(args, "{"+tickArg(nt)+"}")
	}
	if nt.clearResult {
		ks = append(ks, c.keys.result(nt.ID))
	}
	return ks, args
}

// preemptible is the scripts' ARGV of t's preemptibility: "1" or "0"
// (an any made from a constant, which costs no allocation).
func preemptible(t *Task) any {
	if t.NotPreemptible {
		return "0"
	}
	return "1"
}

// nowArg is the scripts' ARGV "now" of a call prepared at ms (the
// client's clock): "" to use Redis's clock (see scriptNow).
func (c *Store) nowArg(ms int64) any {
	if c.serverTime {
		return ""
	}
	return ms
}
