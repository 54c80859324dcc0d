package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A worker's view of the shards is what a sharded lease allocates from
// (shards_lease.go): per shard and level, how many tasks wait and how many
// at the head ran before. Each view comes from a peek (lua/peek.lua) or
// from the reply of the shard's last lease call, which ends with the
// shard's view after it (lease.lua's option view): so the shard a round
// leased from is known as fresh as the call, and a round peeks only the
// shards it did not call within viewFresh. Views may miss what arrived
// since they were read; the calls' by (shardLeaseWindow after the oldest
// view) keeps that under the inversion bound, and a round that cannot
// fill its slots from them reads every older one again before it
// concludes there is no more (leaseRound).

// viewFresh is how long a round allocates from a shard's view without
// reading it again. Under shardLeaseWindow, so that calls made from a
// view of that age still lease (their by leaves them 2 ms to land); the
// inversion bound is by's, whatever viewFresh is. It was 3 ms: 5 ms peeks
// about half as often (0.012 peek pipelines a drained task on 3 shards
// against 0.019), and the busiest master's CPU per task on 3 shards over
// one shard's went 0.435, 0.481, 0.462 → 0.421, 0.426, 0.426 (three
// pairs of overtake-bench --only shards --shards 1,3, medians of 3
// rounds, the builds in turn) with as many lease calls (0.042 a task).
const viewFresh = 5 * time.Millisecond

// shardView is one shard's view.
type shardView struct {
	d, ran []int64   // per level: length, resumed heads at the head
	due    time.Time // the earliest scheduled task or lease deadline as of the last peek, on this host's clock (zero: none)
	at     int64     // when it was read, on the script's clock (ms)
	got    time.Time // when it was read, at the latest, on this host's clock (zero: never)
}

// shardViews holds the views of shard 0's Store (Store.views).
type shardViews struct {
	mu sync.Mutex
	v  []shardView
	// dirty[k]: this process wrote to shard k's lists since its view was
	// read (touch), so the next round reads it again whatever its age.
	dirty []atomic.Bool
	// turns[k] is the round that last started at shard k, round the last
	// round's number (leaseStart); under mu.
	turns []uint64
	round uint64
}

// touch marks the view of task id's shard as behind a write this process
// made there (an Enqueue, a preempted task requeued at its level's head):
// the next lease reads it, so a worker that preempts its own task sees it
// at once. Nothing without shards.
func (c *Store) touch(id string) {
	if c.sharded() {
		c.views.dirty[shardIndex(id, len(c.shards))].Store(true)
	}
}

// keep stores v as shard k's view unless the one held is newer; a lease
// reply's (fromLease) keeps the due time of the last peek.
func (s *shardViews) keep(k int, v shardView, fromLease bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fromLease {
		v.due = s.v[k].due
	}
	if !v.got.Before(s.v[k].got) {
		s.v[k] = v
	}
}

// viewsOf returns a copy of every shard's view, first peeking those not
// read within fresh of now (every one when fresh is 0) or named in again,
// and which shards it peeked. A shard whose peek failed (its slot
// migrating) reads as empty this time and is peeked again next time.
func (c *Store) viewsOf(ctx context.Context, fresh time.Duration, again []bool) ([]shardView, []bool, error) {
	now := c.now()
	c.views.mu.Lock()
	vs := slices.Clone(c.views.v)
	c.views.mu.Unlock()
	read := make([]bool, len(vs))
	for k, v := range vs {
		read[k] = c.views.dirty[k].Swap(false) || v.got.IsZero() || fresh == 0 || now.Sub(v.got) > fresh ||
			(again != nil && again[k])
	}
	if slices.Contains(read, true) {
		got, err := c.peek(ctx, read)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range got {
			if !read[k] {
				continue
			}
			vs[k] = v
			if !v.got.IsZero() {
				c.views.keep(k, v, false)
			}
		}
	}
	return vs, read, nil // a view's slices are never written once made
}

// viewFrom reads a view from vals: per level a length and a ran count,
// from index i on (peek.lua's and lease.lua's replies).
func (c *Store) viewFrom(vals []int64, i int) (d, ran []int64) {
	d, ran = make([]int64, c.cfg.Levels), make([]int64, c.cfg.Levels)
	for l := 0; l < c.cfg.Levels && i+2*l+1 < len(vals); l++ {
		d[l], ran[l] = vals[i+2*l], vals[i+2*l+1]
	}
	return d, ran
}

// peekScript is lua/peek.lua: per level of a shard, its length and
// how many tasks at its head ran before.
var peekScript = script("peek.lua")

// peek runs peekScript on the shards only names, in one pipeline, and
// returns their views (the others' zero). A shard that refuses the call
// has a view of no time (got zero). It fails only when it asked every
// shard and every one refused.
func (c *Store) peek(ctx context.Context, only []bool) ([]shardView, error) {
	cmds := make([]*redis.Cmd, len(c.shards))
	now := c.scriptNow()
	sent := c.now()
	run := func(only func(k int) bool, sha bool) {
		_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for k, s := range c.shards {
				if !only(k) {
					continue
				}
				keys := s.keys.declare(s.sk.peek)
				if sha {
					cmds[k] = peekScript.EvalSha(ctx, p, keys, s.sk.prefix, now)
				} else {
					cmds[k] = peekScript.Eval(ctx, p, keys, s.sk.prefix, now)
				}
			}
			return nil
		})
	}
	run(func(k int) bool { return only[k] }, true)
	noScript := func(k int) bool { return cmds[k] != nil && redis.HasErrorPrefix(cmds[k].Err(), "NOSCRIPT") }
	if slices.ContainsFunc(cmds, func(cmd *redis.Cmd) bool { return cmd != nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") }) {
		run(noScript, false)
	}
	out := make([]shardView, len(c.shards))
	var firstErr error
	failed := 0
	for k, cmd := range cmds {
		if cmd == nil {
			continue
		}
		vals, err := cmd.Int64Slice()
		if err != nil || len(vals) < 2 {
			firstErr = cmp.Or(firstErr, err, errors.New("overtake: peek: empty reply"))
			failed++
			out[k].d, out[k].ran = make([]int64, c.cfg.Levels), make([]int64, c.cfg.Levels)
			continue
		}
		v := shardView{at: vals[0], got: sent}
		v.d, v.ran = c.viewFrom(vals, 2)
		if vals[1] > 0 { // the script's ms, made this host's
			v.due = sent.Add(time.Duration(vals[1]-v.at) * time.Millisecond)
		}
		out[k] = v
	}
	if failed == len(c.shards) {
		// Every shard refused. A peek of some shards only, all refused, is
		// not an outage: the others were called within viewFresh (one
		// master down; its shard reads as empty).
		return nil, scriptErr(firstErr)
	}
	return out, nil
}
