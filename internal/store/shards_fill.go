package store

import (
	"hash/crc32"
	"sync"
	"time"
)

// Where the tasks whose IDs the store makes go on a queue of several
// shards (assignID): a unique task or a periodic tick goes to its home
// shard (home); any other fills one shard at a time (fillShard).

// shardRun and shardRunFor bound the run of made IDs fillShard puts in one
// shard while its Enqueue group is busy: 512 tasks, 5 ms. The time bounds
// what a slow master (a call waiting for a connection) draws while its
// callers wait; at the rate of a busy producer (~100k tasks a second) the
// two bounds meet.
const (
	shardRun    = 512
	shardRunFor = 5 * time.Millisecond
)

// shardFill is fillShard's state: the shard it fills, how many of the run
// went there and since when (on clock, time.Now unless a test sets it).
type shardFill struct {
	mu         sync.Mutex
	shard, run int
	since      time.Time
	clock      func() time.Time
}

// fillShard is the shard of the next task whose ID the store makes and
// ties to no shard. It keeps to one shard while that shard's Enqueue
// group is busy (a call in flight or tasks queued: not idle), for
// shardRun tasks or shardRunFor at most, so that concurrent single
// Enqueues pile up in one group and share its calls as they would on a
// queue of one shard; it moves to the next shard once the group is idle
// or the run is over. (Spread at random, each shard's calls carried a
// Kth of the tasks, and a call costs its master about as much however
// few it carries.) One caller at a time so goes round the shards task by
// task, and so do the tasks of an EnqueueBatch made while no single
// Enqueue waits. When avoid names the shard, the next one it does not
// name.
func (c *Store) fillShard(avoid []bool) int {
	n := len(c.shards)
	f := &c.fill
	f.mu.Lock()
	now := time.Now()
	if f.clock != nil {
		now = f.clock()
	}
	k := f.shard
	if f.run >= shardRun || now.Sub(f.since) >= shardRunFor || c.shards[k].enqs.idle() {
		k, f.run, f.since = (k+1)%n, 0, now
	}
	f.shard = k
	f.run++
	f.mu.Unlock()
	for i := 0; i < n && avoid != nil && avoid[k]; i++ {
		k = (k + 1) % n
	}
	return k
}

// fillLeave ends the run of shard k, whose master a call could not reach:
// fillShard moves on to the next shard, rather than send it the tasks that
// come while the callers it failed are still answered.
func (c *Store) fillLeave(k int) {
	c.fill.mu.Lock()
	if c.fill.shard == k {
		c.fill.run = shardRun
	}
	c.fill.mu.Unlock()
}

// newIDIn returns a fresh ID (as newID's) of shard k of a queue of n
// shards: a random one whose last two hex digits are the first pair that
// puts it there, else another.
func newIDIn(k, n int) string {
	const digits = "0123456789abcdef"
	for {
		var h [32]byte
		randomHex(&h)
		for i := range 256 {
			h[30], h[31] = digits[i>>4], digits[i&15]
			if int(crc32.ChecksumIEEE(h[:])%uint32(n)) == k {
				return string(h[:])
			}
		}
	}
}
