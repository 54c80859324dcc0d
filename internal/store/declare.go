package store

import (
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// The KEYS of a script call. Every call declares every key whose name the
// caller knows: the queue's fixed keys the script may touch, its pending
// lists, the keys of the tasks the call names (acks, leases to extend, a
// checkpoint's task), and last the key absent, which no one writes. Redis
// Cluster checks the declared keys before the script runs: while the
// queue's slot migrates, the source master lacks absent (TRYAGAIN or ASK)
// and the importing master answers a multi-key call that lacks one with
// TRYAGAIN, so no script runs until the migration ends, and none is
// refused part-way through, after some of its writes landed. Outside a
// migration the master owns the slot, serves every command of the script,
// and no MIGRATE can run while a script runs: the keys a script finds only
// as it runs (the IDs it pops, promotes or recovers) are as safe as the
// declared ones. docs/design.md says more ("Keys and cluster slots").
type scriptKeys struct {
	lease, finish, heartbeat, checkpoint, rejoin, deadAdmin, stats, fleet, pause, cancel, peek []string
	// pending is every level's list p:<level>, by level; scheduledCounts
	// is scheduled and n, the keys only a scheduled task's enqueue
	// touches; prefix is the key prefix as a script's ARGV, boxed once.
	// The enqueue calls are built from them (enqueueCall, batchCall).
	pending, scheduledCounts []string
	prefix                   any
	// heads are the records' heads of enqueue_pending.lua's ARGV,
	// "2|<level>|<preemptible>", boxed once: see head.
	heads []any
}

// head is the record head of t for enqueue_pending.lua.
func (k *scriptKeys) head(t *Task) any {
	if t.NotPreemptible {
		return k.heads[2*t.Level]
	}
	return k.heads[2*t.Level+1]
}

// newScriptKeys returns the fixed KEYS of each script of a queue of levels
// levels, in the order the scripts' headers list them.
func newScriptKeys(k keys, levels int) scriptKeys {
	lists := make([]string, levels)
	for l := range levels {
		lists[l] = k.pending(l)
	}
	heads := make([]any, 2*levels)
	for i := range heads {
		heads[i] = fmt.Sprintf("2|%d|%d", i/2, i%2)
	}
	fix := func(ks ...string) []string { return ks }
	return scriptKeys{
		lease: slices.Concat(fix(k.leases(), k.running(), k.scheduled(), k.dead(), k.alive(), k.busy(), k.capacity(),
			k.counts(), k.paused(), k.feed()), lists),
		finish: slices.Concat(fix(k.leases(), k.running(), k.scheduled(), k.dead(), k.done(), k.alive(), k.busy(),
			k.counts(), k.feed()), lists),
		heartbeat: slices.Concat(fix(k.alive(), k.version(), k.paused(), k.prefix+"cnt", k.leases(), k.running(),
			k.scheduled(), k.dead(), k.done(), k.busy(), k.capacity(), k.counts()), lists),
		checkpoint: fix(k.leases()),
		rejoin:     fix(k.running()),
		deadAdmin:  slices.Concat(fix(k.dead(), k.counts()), lists),
		stats:      slices.Concat(fix(k.counts(), k.alive(), k.paused()), lists),
		fleet:      fix(k.alive(), k.capacity(), k.busy()),
		pause:      fix(k.paused()),
		cancel:     slices.Concat(fix(k.scheduled(), k.done(), k.counts(), k.feed()), lists),
		peek:       slices.Concat(fix(k.scheduled(), k.leases(), k.paused()), lists),

		pending:         lists,
		scheduledCounts: fix(k.scheduled(), k.counts()),
		prefix:          k.prefix,
		heads:           heads,
	}
}

// declare returns the KEYS of one call: first (a script's fixed keys),
// then more, then absent.
func (k keys) declare(first []string, more ...string) []string {
	out := make([]string, 0, len(first)+len(more)+1)
	out = append(append(out, first...), more...)
	return append(out, k.absent())
}

// taskKeys appends the record, state and checkpoint keys of id to ks.
func (k keys) taskKeys(ks []string, id string) []string {
	return append(ks, k.task(id), k.state(id), k.checkpoint(id))
}

// SlotMoving reports whether err is Redis Cluster refusing a call while
// the queue's slot migrates (TRYAGAIN, or a redirection go-redis gave up
// following): the call changed nothing and succeeds once the slot has
// moved, so a caller retries it without counting an outage.
func SlotMoving(err error) bool {
	return redis.HasErrorPrefix(err, "TRYAGAIN") || redis.HasErrorPrefix(err, "ASK ") || redis.HasErrorPrefix(err, "MOVED ")
}
