package queue

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
	// OldestReadyAt is when the task at the head of the list became
	// pending; zero when the level is empty.
	OldestReadyAt time.Time
}

// Stats is a snapshot of a queue.
type Stats struct {
	Queue   string
	Levels  []LevelStats // lowest level first
	Workers int64        // live workers
}

// statsScript reads every counter of a queue in one round trip.
//
//	KEYS[1] cnt  ARGV[1] prefix  ARGV[2] levels  ARGV[3] now ms
var statsScript = redis.NewScript(`
local P, n = ARGV[1], tonumber(ARGV[2])
local out = {}
for l = 0, n - 1 do
  local key = P .. 'p:' .. l
  local head = redis.call('LINDEX', key, 0)
  local rdy = 0
  if head then rdy = tonumber(redis.call('HGET', P .. 't:' .. head, 'rdy') or '0') end
  local a, s, d = unpack(redis.call('HMGET', KEYS[1], 'a' .. l, 's' .. l, 'd' .. l))
  out[#out + 1] = {redis.call('LLEN', key), tonumber(a or '0'), tonumber(s or '0'), tonumber(d or '0'), rdy}
end
out[#out + 1] = redis.call('ZCOUNT', P .. 'alive', ARGV[3], '+inf')
return out
`)

// Stats returns the depth, in-flight, scheduled and dead counts per level
// in one round trip.
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	raw, err := statsScript.Run(ctx, c.rdb, []string{c.keys.counts()},
		c.keys.prefix, c.cfg.Levels, c.cfg.Clock().UnixMilli()).Slice()
	if err != nil {
		return nil, fmt.Errorf("overtake: stats: %w", err)
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
		ls := LevelStats{Level: l, Name: c.LevelName(l), Pending: n(0), Active: n(1), Scheduled: n(2), Dead: n(3)}
		if ms := n(4); ms > 0 {
			ls.OldestReadyAt = time.UnixMilli(ms)
		}
		st.Levels = append(st.Levels, ls)
	}
	if len(raw) > c.cfg.Levels {
		st.Workers, _ = raw[c.cfg.Levels].(int64)
	}
	return st, nil
}

// Depths returns the pending count per level in one round trip.
func (c *Client) Depths(ctx context.Context) (map[int]int64, error) {
	cmds := make([]*redis.IntCmd, c.cfg.Levels)
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for l := range cmds {
			cmds[l] = p.LLen(ctx, c.keys.pending(l))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("overtake: depths: %w", err)
	}
	out := make(map[int]int64, len(cmds))
	for l, cmd := range cmds {
		out[l] = cmd.Val()
	}
	return out, nil
}

// Inspect returns the record of task id, or ErrTaskNotFound.
func (c *Client) Inspect(ctx context.Context, id string) (*Task, error) {
	m, err := c.rdb.HGetAll(ctx, c.keys.task(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("overtake: inspect %s: %w", id, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrTaskNotFound, id)
	}
	return decodeMap(m)
}

// DeadTasks returns up to count dead-lettered tasks, oldest first, from
// offset. Records that cannot be decoded are returned with what could be
// read.
func (c *Client) DeadTasks(ctx context.Context, offset, count int64) ([]*Task, error) {
	ids, err := c.rdb.ZRange(ctx, c.keys.dead(), offset, offset+count-1).Result()
	if err != nil {
		return nil, fmt.Errorf("overtake: dead tasks: %w", err)
	}
	out := make([]*Task, 0, len(ids))
	for _, id := range ids {
		t, err := c.Inspect(ctx, id)
		if err != nil && !errors.Is(err, ErrMalformedRecord) {
			if errors.Is(err, ErrTaskNotFound) {
				continue
			}
			return out, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Pending returns the IDs waiting at level, head first (the next to run).
func (c *Client) Pending(ctx context.Context, level int) ([]string, error) {
	ids, err := c.rdb.LRange(ctx, c.keys.pending(level), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("overtake: pending %s: %w", strconv.Itoa(level), err)
	}
	return ids, nil
}
