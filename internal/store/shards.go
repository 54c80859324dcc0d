package store

import (
	"context"
	"fmt"
	"hash/crc32"
	"strconv"
	"sync"
	"sync/atomic"
)

// Shards (Config.Shards): a queue of K > 1 shards spreads its keys over K
// hash tags, so that on a Redis Cluster one queue's work uses several
// masters. Shard 0 keeps the prefix of a queue without shards,
// "{<ns>:<queue>}:", key for key; shard k ≥ 1 is "{<ns>:<queue>:<k>}:"
// (escapeName escapes ':' in names, so no queue's prefix is another's
// shard). Each shard is a whole queue of the one-shard layout: its level
// lists, leases, schedule, dead set, counts, feed and the keys of its
// tasks, and every script call stays in one shard's slot with its
// declared keys and absent guard. A task lives in the shard its ID names
// (shardOf: CRC-32 of the ID mod K), so every later call finds it from
// the ID alone.
//
// What the fleet shares: the shape lives in shard 0 only; every shard
// holds the workers' liveness and capacity (a heartbeat goes to each, so
// any shard's reservation check sees the whole fleet), and the pause
// state (written to every shard, so each lease refuses a paused level it
// pops). The fleet's rates are counted in shard 0. Workers lease in two
// steps (shards_lease.go) to keep one strict priority order across the
// shards.

// shardKeys returns the keys of shard k of queue name in namespace ns.
func shardKeys(ns, name string, k int) keys { return keys{prefix: ShardTag(ns, name, k) + ":"} }

// ShardTag is the hash tag, braces included, of the keys of shard k of
// queue name in namespace ns: "{<ns>:<name>}" for shard 0 (a queue of one
// shard's), "{<ns>:<name>:<k>}" for the others, the names escaped
// (escapeName). Redis Cluster puts every key of a shard in that tag's slot.
func ShardTag(ns, name string, k int) string {
	if k == 0 {
		return "{" + escapeName(ns) + ":" + escapeName(name) + "}"
	}
	return "{" + escapeName(ns) + ":" + escapeName(name) + ":" + strconv.Itoa(k) + "}"
}

// newShards makes c the shard 0 of a queue of c.cfg.Shards shards and
// opens the others: Stores of their own (group commits, sweep, keys) over
// the same Redis client and Config, whose shape check is c's.
func (c *Store) newShards() {
	n := c.cfg.Shards
	if n <= 1 {
		return
	}
	c.shards = make([]*Store, n)
	c.shards[0] = c
	c.views.v, c.views.dirty, c.views.turns = make([]shardView, n), make([]atomic.Bool, n), make([]uint64, n)
	pool := newFlushPool(shardEnqueueTurns)
	for k := 1; k < n; k++ {
		s := &Store{rdb: c.rdb, cfg: c.cfg, keys: shardKeys(c.cfg.Namespace, c.cfg.Name, k), serverTime: c.serverTime,
			tracer: c.tracer, prop: c.prop, parent: c}
		s.init()
		c.shards[k] = s
	}
	for _, s := range c.shards {
		joinPool(pool, &s.enqs)
	}
}

// sharded reports whether c is shard 0 of a queue of several shards.
func (c *Store) sharded() bool { return len(c.shards) > 1 }

// shardIndex is the shard of key material v (a task ID, a uniqueness
// digest, a schedule's name) in a queue of n shards.
func shardIndex(v string, n int) int {
	if n <= 1 {
		return 0
	}
	return int(crc32.ChecksumIEEE([]byte(v)) % uint32(n))
}

// shardOf returns the Store of task id's shard: c itself without shards.
func (c *Store) shardOf(id string) *Store {
	if !c.sharded() {
		return c
	}
	return c.shards[shardIndex(id, len(c.shards))]
}

// Shards returns the Stores of the queue's shards, shard 0 (c) first; one,
// c, without shards.
func (c *Store) Shards() []*Store {
	if !c.sharded() {
		return []*Store{c}
	}
	return c.shards
}

// ShardOf returns the shard index of task id in a queue of n shards.
func ShardOf(id string, n int) int { return shardIndex(id, n) }

// home is the shard a new task t must live in, -1 when any: a periodic
// tick's shard holds its schedule's key, a unique task's its lock, so
// that the enqueue script finds them in the task's slot and two equal
// tasks meet in one shard.
func (c *Store) home(t *Task) int {
	switch {
	case !c.sharded():
		return -1
	case t.schedule != "":
		return shardIndex("periodic:"+t.schedule, len(c.shards))
	case t.unique > 0:
		return shardIndex("u:"+uniqueDigest(t.Type, t.Payload), len(c.shards))
	}
	return -1
}

// assignID gives nt an ID in its home shard when it has none (else in
// the shard fillShard names), or checks
// that the caller's ID lives there: on a sharded queue a unique task with
// the caller's ID must hash to its lock's shard, and a periodic tick's ID
// (Tick's) gets the suffix "~<n>" of the first n that puts it there.
func (c *Store) assignID(nt *Task) error {
	h := c.home(nt)
	if nt.ID == "" {
		switch {
		case !c.sharded():
			nt.ID = newID()
		case h >= 0:
			nt.ID = newIDIn(h, len(c.shards))
		default:
			nt.ID = newIDIn(c.fillShard(nt.avoid), len(c.shards))
		}
		return nil
	}
	if h >= 0 && nt.schedule != "" && shardIndex(nt.ID, len(c.shards)) != h {
		// A tick's ID is Tick's; the same suffix for every process.
		base := nt.ID
		for n := 1; shardIndex(nt.ID, len(c.shards)) != h; n++ {
			nt.ID = base + "~" + strconv.Itoa(n)
		}
		return nil
	}
	if h >= 0 && shardIndex(nt.ID, len(c.shards)) != h {
		return fmt.Errorf("%w: on a queue of %d shards a unique or periodic task's ID must hash to the shard "+
			"of its lock (%d); leave the ID empty to have one made", ErrInvalidTask, len(c.shards), h)
	}
	return nil
}

// eachShard calls fn on every shard at once and returns the first error,
// in shard order.
func (c *Store) eachShard(ctx context.Context, fn func(ctx context.Context, k int, s *Store) error) error {
	ss := c.Shards()
	if len(ss) == 1 {
		return fn(ctx, 0, c)
	}
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for k, s := range ss {
		wg.Go(func() { errs[k] = fn(ctx, k, s) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
