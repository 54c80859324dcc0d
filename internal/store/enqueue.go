package store

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
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
func (c *Store) Enqueue(ctx context.Context, t *Task, opts ...Option) (_ *Task, err error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	nt, ks, args, span, err := c.prepare(ctx, t, opts)
	if err != nil {
		return nil, err
	}
	defer func() { endEnqueue(span, err) }()
	w := &enqWait{nt: nt, keys: ks, args: args}
	if nt.schedule != "" {
		err = c.enqueueOne(ctx, w) // a tick goes alone (enqueue_batch.lua has none)
	} else {
		err = c.enqs.do(ctx, w)
	}
	if err != nil {
		return nil, err
	}
	return nt, nil
}

// prepare validates t, applies opts to a copy, starts its producer span
// (whose trace context goes into the copy's Headers) and builds the script
// call. The caller ends the span once the record is written; on error no
// span was started.
func (c *Store) prepare(ctx context.Context, t *Task, opts []Option) (*Task, []string, []any, trace.Span, error) {
	if t == nil || t.Type == "" {
		return nil, nil, nil, nil, fmt.Errorf("%w: a task needs a type", ErrInvalidTask)
	}
	nt := *t
	for _, o := range opts {
		if err := o(c, &nt); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	if nt.MaxRetries < 0 || nt.Timeout < 0 {
		return nil, nil, nil, nil, fmt.Errorf("%w: negative MaxRetries %d or Timeout %v",
			ErrInvalidTask, nt.MaxRetries, nt.Timeout)
	}
	if nt.Level < 0 || nt.Level >= c.cfg.Levels {
		return nil, nil, nil, nil, fmt.Errorf("%w: %d is outside 0..%d", ErrInvalidLevel, nt.Level, c.cfg.Levels-1)
	}
	if limit := c.cfg.MaxPayloadBytes; limit >= 0 && len(nt.Payload) > limit {
		return nil, nil, nil, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrPayloadTooLarge, len(nt.Payload), limit)
	}
	nt.clearResult = nt.ID != "" // a generated ID has no earlier result
	if nt.ID == "" {
		nt.ID = newID()
	}
	if nt.ID == anchorMember {
		return nil, nil, nil, nil, fmt.Errorf("%w: the ID %q is reserved", ErrInvalidTask, nt.ID)
	}
	_, span := c.startEnqueue(ctx, &nt)
	if nt.unique > 0 { // nt.Headers is startEnqueue's copy, or nil
		if nt.Headers == nil {
			nt.Headers = make(map[string]string, 1)
		}
		nt.Headers[UniqueHeader] = uniqueDigest(nt.Type, nt.Payload)
	}
	now := c.now()
	state, mode, dest := StatePending, "p", c.keys.pending(nt.Level)
	var delay time.Duration
	if nt.ProcessAt.After(now) {
		state, mode, dest, delay = StateScheduled, "s", c.keys.scheduled(), nt.ProcessAt.Sub(now)
		c.sweep.at(nt.ProcessAt)
	} else {
		nt.ProcessAt = now
	}
	body, err := encodeBody(&nt)
	if err != nil {
		endEnqueue(span, err)
		return nil, nil, nil, nil, err
	}
	prb := "1"
	if nt.NotPreemptible {
		prb = "0"
	}
	nt.State, nt.EnqueuedAt, nt.ReadyAt, nt.OriginalLevel, nt.AgedAt = state, now, now, nt.Level, time.Time{}
	args := []any{c.keys.prefix, nt.ID, mode, c.scriptNow(), delay.Milliseconds(), nt.Level, prb, body}
	ks := []string{c.keys.task(nt.ID), dest, c.keys.state(nt.ID), c.keys.counts()}
	switch {
	case nt.unique > 0 && nt.schedule != "":
		ks = append(ks, c.keys.unique(nt.Headers[UniqueHeader]), c.keys.periodic(nt.schedule))
		args = append(args, fmt.Sprintf(`{"u":%d,%s}`, nt.unique.Milliseconds(), tickArg(&nt)))
	case nt.unique > 0:
		ks = append(ks, c.keys.unique(nt.Headers[UniqueHeader]))
		args = append(args, fmt.Sprintf(`{"u":%d}`, nt.unique.Milliseconds()))
	case nt.schedule != "":
		ks = append(ks, c.keys.periodic(nt.schedule))
		args = append(args, "{"+tickArg(&nt)+"}")
	}
	if nt.clearResult {
		ks = append(ks, c.keys.result(nt.ID))
	}
	return &nt, ks, args, span, nil
}
