package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// LevelStats counts the tasks of one level.
type LevelStats struct {
	Level     int
	Name      string
	Pending   int64 // waiting in the level's list
	Active    int64 // leased by a worker
	Scheduled int64 // delayed or waiting for a retry
	Dead      int64 // dead-lettered
	Canceled  int64 // canceled (Cancel), since the queue began
	// OldestReadyAt is when the task at the head of the list became
	// pending; zero when the level is empty.
	OldestReadyAt time.Time
	// Paused says whether workers lease from the level (see Pause).
	Paused PauseMode
	// Rates are the fleet's outcomes per second at this level over the
	// last RateWindow, as reported in workers' heartbeats.
	Rates Rates
}

// Stats is a snapshot of a queue.
type Stats struct {
	Queue   string
	Levels  []LevelStats // lowest level first
	Workers int64        // live workers
	// PoolRates are the fleet's rates by slot pool name (runtime pools),
	// over the last RateWindow; empty when no worker has pools.
	PoolRates map[string]Rates
}

// statsScript is lua/stats.lua: it reads every counter of a queue in one
// round trip.
var statsScript = script("stats.lua")

// statsOne is Stats in c's shard: returns the depth, in-flight, scheduled and dead counts per level
// in one round trip.
func (c *Store) statsOne(ctx context.Context) (*Stats, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	raw, err := statsScript.Run(ctx, c.rdb, c.keys.declare(c.sk.stats),
		c.keys.prefix, c.cfg.Levels, c.scriptNow()).Slice()
	if err != nil {
		return nil, wrapf(scriptErr(err), "stats")
	}
	st := &Stats{Queue: c.cfg.Name}
	for l := 0; l < c.cfg.Levels && l < len(raw); l++ {
		v, _ := raw[l].([]any)
		n := func(i int) int64 {
			if i < len(v) {
				x, _ := v[i].(int64)
				return x
			}
			return 0
		}
		ls := LevelStats{Level: l, Name: c.LevelName(l), Pending: n(0), Active: n(1), Scheduled: n(2), Dead: n(3),
			Canceled: n(5)}
		if ms := n(4); ms > 0 { // (n(5) is Canceled)
			ls.OldestReadyAt = time.UnixMilli(ms)
		}
		st.Levels = append(st.Levels, ls)
	}
	if len(raw) > c.cfg.Levels+2 {
		st.Workers, _ = raw[c.cfg.Levels].(int64)
		p, _ := raw[c.cfg.Levels+1].(string)
		rr, _ := raw[c.cfg.Levels+2].([]any)
		paused := c.parsePaused(p)
		var rates []Rates
		rates, st.PoolRates = parseRates(rr, c.cfg.Levels)
		for i := range st.Levels {
			st.Levels[i].Paused, st.Levels[i].Rates = paused[i], rates[i]
		}
	}
	return st, nil
}

// depthsOne is Depths in c's shard: returns the pending count per level in one round trip (after
// the shape check, the first time: the levels are the Store's).
func (c *Store) depthsOne(ctx context.Context) (map[int]int64, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	cmds := make([]*redis.IntCmd, c.cfg.Levels)
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for l := range cmds {
			cmds[l] = p.LLen(ctx, c.keys.pending(l))
		}
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "depths")
	}
	out := make(map[int]int64, len(cmds))
	for l, cmd := range cmds {
		out[l] = cmd.Val()
	}
	return out, nil
}

// Inspect returns the record of task id, or ErrTaskNotFound. A record
// that cannot be decoded is returned with what could be read and an error
// wrapping ErrMalformedRecord (or ErrCorrupt when a key of the task holds
// another type). The task's result (SaveResult) comes with it; once the
// record is gone, a retained result alone is returned as a done task with
// ResultOnly set.
func (c *Store) Inspect(ctx context.Context, id string) (*Task, error) {
	if s := c.shardOf(id); s != c {
		return s.Inspect(ctx, id)
	}
	var vals *redis.SliceCmd
	var dl *redis.FloatCmd
	_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		vals = p.MGet(ctx, c.keys.task(id), c.keys.state(id), c.keys.checkpoint(id), c.keys.result(id))
		dl = p.ZScore(ctx, c.keys.leases(), id) // a missing or corrupt leases key: no deadline
		return nil
	})
	if err := vals.Err(); err != nil {
		return nil, wrapf(err, "inspect %s", id)
	}
	v := vals.Val()
	if len(v) != 4 {
		return nil, fmt.Errorf("overtake: inspect %s: short reply", id)
	}
	if v[0] == nil && v[1] == nil {
		for _, k := range []string{c.keys.task(id), c.keys.state(id)} {
			if typ := c.rdb.Type(ctx, k).Val(); typ != "none" && typ != "" {
				return nil, fmt.Errorf("%w: %s is a %s, want a string", ErrCorrupt, k, typ)
			}
		}
		if t, ok := resultOnly(id, v[3]); ok {
			return t, nil
		}
		return nil, fmt.Errorf("%w: %q", ErrTaskNotFound, id)
	}
	if v[0] == nil && c.rdb.Exists(ctx, c.keys.prefix+"x:"+id).Val() == 0 {
		// Only a state left behind by a record deleted from outside.
		return nil, fmt.Errorf("%w: %q", ErrTaskNotFound, id)
	}
	t, err := decodeTask(id, v[0], v[1], v[2])
	attachResult(t, v[3])
	if ms := dl.Val(); ms > 0 && t.Token != "" {
		t.LeaseDeadline = msTime(int64(ms))
	}
	return t, err
}

// deadTasksOne is DeadTasks in c's shard: returns up to count dead-lettered tasks, oldest first, from
// offset. Records that cannot be decoded are returned with what could be
// read.
func (c *Store) deadTasksOne(ctx context.Context, offset, count int64) ([]*Task, error) {
	if offset < 0 || count < 1 {
		return nil, fmt.Errorf("%w: DeadTasks offset %d, count %d: want offset >= 0 and count >= 1", ErrInvalidTask, offset, count)
	}
	ids, err := c.rdb.ZRange(ctx, c.keys.dead(), offset, offset+count-1).Result()
	if err != nil {
		return nil, wrapf(err, "dead tasks")
	}
	return c.inspectDead(ctx, ids)
}

// inspectDead returns the records of the dead tasks ids, in order: those
// gone since they were listed are left out, those that cannot be decoded
// come with what could be read.
func (c *Store) inspectDead(ctx context.Context, ids []string) ([]*Task, error) {
	out := make([]*Task, 0, len(ids))
	for _, id := range ids {
		t, err := c.Inspect(ctx, id)
		if err != nil && !errors.Is(err, ErrMalformedRecord) && !errors.Is(err, ErrSchema) {
			if errors.Is(err, ErrTaskNotFound) {
				continue
			}
			return out, err
		}
		out = append(out, t)
	}
	return out, nil
}

// pendingOne is Pending in c's shard: returns the IDs waiting at level, head first (the next to run).
func (c *Store) pendingOne(ctx context.Context, level int) ([]string, error) {
	if level < 0 || level >= c.cfg.Levels {
		return nil, fmt.Errorf("%w: %d is outside 0..%d", ErrInvalidLevel, level, c.cfg.Levels-1)
	}
	ids, err := c.rdb.LRange(ctx, c.keys.pending(level), 0, -1).Result()
	if err != nil {
		return nil, wrapf(err, "pending %s", strconv.Itoa(level))
	}
	return ids, nil
}
