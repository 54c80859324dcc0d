package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Periodic tasks: the runtime enqueues each tick of a schedule with the
// Tick option. The enqueue script compares the tick with the schedule's
// last, periodic:<name>, and sets it in the same call, so of all the
// runtimes that try a tick exactly one decides it (ErrTickTaken for the
// others), and a tick older than the last is never enqueued. The key
// holds the spec of the runtime that decided the last tick with it
// (LastTick), so a runtime can tell that another follows another spec.

// ErrTickTaken is returned by Enqueue with Tick when the schedule's tick,
// or a later one, was decided already (by another runtime, most often).
var ErrTickTaken = errors.New("overtake: periodic tick enqueued already")

// periodic is the key of schedule name's last tick: "<ms>|<spec>".
func (k keys) periodic(name string) string { return k.prefix + "periodic:" + name }

// Tick makes the task schedule name's tick at: it is enqueued only if at
// is after the schedule's last tick, which it becomes (with spec, the
// schedule's spec as the caller knows it), and else refused with
// ErrTickTaken. Its ID is "<name>@<at, RFC 3339 in UTC>" (on a queue of
// several shards followed by "~<n>", the same for every process, so that
// it lives in the shard of its schedule's key). A task with Tick is
// enqueued alone, not in a batch.
func Tick(name, spec string, at time.Time) Option {
	return func(_ *Store, t *Task) error {
		if name == "" {
			return fmt.Errorf("%w: a periodic tick needs a schedule name", ErrInvalidTask)
		}
		t.schedule, t.spec, t.tick = name, spec, at.UnixMilli()
		t.ID = name + "@" + at.UTC().Format(time.RFC3339Nano)
		return nil
	}
}

// tickArg is the tick and spec of t as enqueue.lua's ARGV[9] "k" (a
// string) and "s", without the braces.
func tickArg(t *Task) string {
	spec, _ := json.Marshal(t.spec) // a string always encodes
	return `"k":"` + strconv.FormatInt(t.tick, 10) + `","s":` + string(spec)
}

// LastTick returns schedule name's last tick and the spec of the runtime
// that decided it ("" when the key was written before specs were kept);
// a zero time when no tick was decided yet.
func (c *Store) LastTick(ctx context.Context, name string) (time.Time, string, error) {
	if c.sharded() {
		if s := c.shards[shardIndex("periodic:"+name, len(c.shards))]; s != c {
			return s.LastTick(ctx, name)
		}
	}
	v, err := c.rdb.Get(ctx, c.keys.periodic(name)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return time.Time{}, "", nil
	case err != nil:
		return time.Time{}, "", wrapf(err, "last tick of %q", name)
	}
	ms, spec, _ := strings.Cut(v, "|")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("%w: %s holds %q, not a tick", ErrCorrupt, c.keys.periodic(name), truncate(v, 80))
	}
	return msTime(n), spec, nil
}
