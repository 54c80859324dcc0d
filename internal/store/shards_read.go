package store

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The reads of a queue as a whole: on a queue of several shards each asks
// every shard (at once, one call each) and merges what they answer.

// Stats returns the depth, in-flight, scheduled and dead counts per level
// in one round trip (per shard, all at once, summed on a queue of several
// shards; the oldest pending task is the oldest of any shard, the workers,
// pause state and rates are shard 0's, where the fleet keeps them).
func (c *Store) Stats(ctx context.Context) (*Stats, error) {
	if !c.sharded() {
		return c.statsOne(ctx)
	}
	all := make([]*Stats, len(c.shards))
	err := c.eachShard(ctx, func(ctx context.Context, k int, s *Store) (err error) {
		all[k], err = s.statsOne(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	st := all[0]
	for _, o := range all[1:] {
		for l := range st.Levels {
			if l >= len(o.Levels) {
				break
			}
			a, b := &st.Levels[l], o.Levels[l]
			a.Pending += b.Pending
			a.Active += b.Active
			a.Scheduled += b.Scheduled
			a.Dead += b.Dead
			a.Canceled += b.Canceled
			if !b.OldestReadyAt.IsZero() && (a.OldestReadyAt.IsZero() || b.OldestReadyAt.Before(a.OldestReadyAt)) {
				a.OldestReadyAt = b.OldestReadyAt
			}
		}
	}
	return st, nil
}

// Depths returns the pending count per level in one round trip (after
// the shape check, the first time: the levels are the Store's), summed
// over the shards.
func (c *Store) Depths(ctx context.Context) (map[int]int64, error) {
	if !c.sharded() {
		return c.depthsOne(ctx)
	}
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	d, err := c.shardDepths(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int]int64, c.cfg.Levels)
	for _, row := range d {
		for l, n := range row {
			out[l] += n
		}
	}
	return out, nil
}

// shardDepths reads every level's length in every shard in one pipeline:
// d[k][l] is level l's in shard k.
func (c *Store) shardDepths(ctx context.Context) ([][]int64, error) {
	ss := c.Shards()
	cmds := make([][]*redis.IntCmd, len(ss))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, s := range ss {
			cmds[k] = make([]*redis.IntCmd, c.cfg.Levels)
			for l := range cmds[k] {
				cmds[k][l] = p.LLen(ctx, s.sk.pending[l])
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "depths")
	}
	out := make([][]int64, len(ss))
	for k := range cmds {
		out[k] = make([]int64, c.cfg.Levels)
		for l, cmd := range cmds[k] {
			out[k][l] = cmd.Val()
		}
	}
	return out, nil
}

// DeadTasks returns up to count dead-lettered tasks, oldest first, from
// offset (across every shard). Records that cannot be decoded are
// returned with what could be read.
func (c *Store) DeadTasks(ctx context.Context, offset, count int64) ([]*Task, error) {
	if !c.sharded() || offset < 0 || count < 1 {
		return c.deadTasksOne(ctx, offset, count)
	}
	var mu sync.Mutex
	var all []redis.Z
	err := c.eachShard(ctx, func(ctx context.Context, _ int, s *Store) error {
		zs, err := s.rdb.ZRangeWithScores(ctx, s.keys.dead(), 0, offset+count-1).Result()
		mu.Lock()
		all = append(all, zs...)
		mu.Unlock()
		return err
	})
	if err != nil {
		return nil, wrapf(err, "dead tasks")
	}
	slices.SortStableFunc(all, func(a, b redis.Z) int {
		if a.Score != b.Score {
			return cmp.Compare(a.Score, b.Score)
		}
		return strings.Compare(a.Member.(string), b.Member.(string))
	})
	if int64(len(all)) <= offset {
		return []*Task{}, nil
	}
	all = all[offset:min(int64(len(all)), offset+count)]
	ids := make([]string, len(all))
	for i, z := range all {
		ids[i], _ = z.Member.(string)
	}
	return c.inspectDead(ctx, ids) // Inspect finds each in its shard
}

// Pending returns the IDs waiting at level, head first (the next to run),
// shard after shard on a queue of several shards.
func (c *Store) Pending(ctx context.Context, level int) ([]string, error) {
	var out []string
	for _, s := range c.Shards() {
		ids, err := s.pendingOne(ctx, level)
		if err != nil {
			return nil, err
		}
		out = append(out, ids...)
	}
	return out, nil
}

// PendingPage returns up to count IDs waiting at level from offset (0 is
// the head, the next to run), and the level's length: shard after shard
// on a queue of several shards, as Pending lists them.
func (c *Store) PendingPage(ctx context.Context, level int, offset, count int64) ([]string, int64, error) {
	if !c.sharded() {
		return c.pendingPageOne(ctx, level, offset, count)
	}
	return pageShards(ctx, c, offset, count, func(ctx context.Context, s *Store, off, n int64) ([]string, int64, error) {
		return s.pendingPageOne(ctx, level, off, n)
	})
}

// Running returns up to count tasks holding a lease, soonest deadline
// first from offset, and how many hold one: shard after shard on a queue
// of several shards.
func (c *Store) Running(ctx context.Context, offset, count int64) ([]*Task, int64, error) {
	if !c.sharded() {
		return c.runningOne(ctx, offset, count)
	}
	return pageShards(ctx, c, offset, count, func(ctx context.Context, s *Store, off, n int64) ([]*Task, int64, error) {
		return s.runningOne(ctx, off, n)
	})
}

// pageShards pages through the shards' lists as one list, shard 0 first:
// page(s, off, n) returns shard s's entries from off (at most n) and its
// length. It calls each shard once, asking only for what the page still
// lacks.
func pageShards[T any](ctx context.Context, c *Store, offset, count int64,
	page func(ctx context.Context, s *Store, off, n int64) ([]T, int64, error)) ([]T, int64, error) {
	if offset < 0 || count < 1 || count > maxPage {
		return page(ctx, c, offset, count) // the shard's own checks refuse it
	}
	var out []T
	var total int64
	for _, s := range c.shards {
		// Only what the page still lacks (a full page still needs the
		// shard's length: one entry is the least a shard's page reads).
		ids, n, err := page(ctx, s, max(offset-total, 0), max(count-int64(len(out)), 1))
		if err != nil {
			return nil, 0, err
		}
		if offset < total+n && int64(len(out)) < count {
			out = append(out, ids[:min(int64(len(ids)), count-int64(len(out)))]...)
		}
		total += n
	}
	return out, total, nil
}

// Tasks returns the records of ids in one round trip per shard, in order;
// IDs without a record are left out, and records that cannot be decoded
// are returned with what could be read.
func (c *Store) Tasks(ctx context.Context, ids []string) ([]*Task, error) {
	if !c.sharded() || len(ids) > maxPage {
		return c.tasksOne(ctx, ids)
	}
	by := map[*Store][]string{}
	for _, id := range ids {
		s := c.shardOf(id)
		by[s] = append(by[s], id)
	}
	found := map[string]*Task{}
	for s, part := range by {
		ts, err := s.tasksOne(ctx, part)
		for _, t := range ts {
			found[t.ID] = t
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]*Task, 0, len(found))
	for _, id := range ids {
		if t := found[id]; t != nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// Workers returns the live workers, at most 1,000, with their capacity,
// pools and the leases they hold (summed over the shards).
func (c *Store) Workers(ctx context.Context) ([]WorkerInfo, error) {
	if !c.sharded() {
		return c.workersOne(ctx)
	}
	all := make([][]WorkerInfo, len(c.shards))
	err := c.eachShard(ctx, func(ctx context.Context, k int, s *Store) (err error) {
		all[k], err = s.workersOne(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := all[0]
	idx := make(map[string]int, len(out))
	for i, w := range out {
		idx[w.ID] = i
	}
	for _, ws := range all[1:] {
		for _, w := range ws {
			i, ok := idx[w.ID]
			if !ok {
				continue // alive only in a shard its heartbeat reached first
			}
			out[i].Busy += w.Busy
			for j := range out[i].Pools {
				for _, p := range w.Pools {
					if p.Name == out[i].Pools[j].Name {
						out[i].Pools[j].Busy += p.Busy
					}
				}
			}
		}
	}
	return out, nil
}

// Preemptions returns up to count feed events newer than after (a Seq; ""
// for the newest count), oldest first: on a queue of several shards the
// shards' feeds merged by Seq (their stream IDs, which start with the
// time of the event).
func (c *Store) Preemptions(ctx context.Context, after string, count int64) ([]FeedEvent, error) {
	if !c.sharded() || count < 1 {
		return c.preemptionsOne(ctx, after, count)
	}
	var mu sync.Mutex
	var all []FeedEvent
	err := c.eachShard(ctx, func(ctx context.Context, _ int, s *Store) error {
		evs, err := s.preemptionsOne(ctx, after, count)
		mu.Lock()
		all = append(all, evs...)
		mu.Unlock()
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(all, func(a, b FeedEvent) int { return compareSeq(a.Seq, b.Seq) })
	if int64(len(all)) > count {
		if after == "" {
			all = all[int64(len(all))-count:]
		} else {
			all = all[:count]
		}
	}
	return all, nil
}

// compareSeq orders two stream IDs, "<ms>-<seq>".
func compareSeq(a, b string) int {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	x, _ := strconv.ParseInt(am, 10, 64)
	y, _ := strconv.ParseInt(bm, 10, 64)
	if x != y {
		return cmp.Compare(x, y)
	}
	x, _ = strconv.ParseInt(as, 10, 64)
	y, _ = strconv.ParseInt(bs, 10, 64)
	return cmp.Compare(x, y)
}

// setPause writes the pause state of every shard, shard 0 last: each
// shard's lease call refuses the levels its own copy pauses.
func (c *Store) setPause(ctx context.Context, op string, level int, mode string) error {
	ss := c.Shards()
	for k := len(ss) - 1; k >= 0; k-- {
		if err := ss[k].setPauseOne(ctx, op, level, mode); err != nil {
			return err
		}
	}
	return nil
}

// Deregister removes a stopping worker from the fleet (from every shard),
// so it is no longer counted as having free slots.
func (c *Store) Deregister(ctx context.Context, worker string) error {
	return c.eachShard(ctx, func(ctx context.Context, _ int, s *Store) error { return s.deregisterOne(ctx, worker) })
}
