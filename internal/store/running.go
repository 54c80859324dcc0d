package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Paged reads for consoles: the running tasks and one page of a level's
// pending list, each in two round trips whatever the queue's size.

// maxPage bounds one Running or PendingPage call.
const maxPage = 1000

// runningOne is Running in c's shard: returns up to count leased tasks, from offset in the order of
// their lease deadlines (the lease that expires first first), and how many
// tasks are leased in all. A task whose record cannot be decoded is
// returned with what could be read; one that ended between the two reads
// is left out.
func (c *Store) runningOne(ctx context.Context, offset, count int64) ([]*Task, int64, error) {
	if offset < 0 || count < 1 || count > maxPage {
		return nil, 0, fmt.Errorf("%w: Running offset %d, count %d: want offset >= 0 and count 1..%d",
			ErrInvalidTask, offset, count, maxPage)
	}
	var ids *redis.StringSliceCmd
	var total *redis.IntCmd
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ids = p.ZRangeByScore(ctx, c.keys.leases(), &redis.ZRangeBy{Min: "-inf", Max: belowAnchor, Offset: offset, Count: count})
		total = p.ZCount(ctx, c.keys.leases(), "-inf", belowAnchor)
		return nil
	})
	if err != nil {
		return nil, 0, wrapf(err, "running")
	}
	tasks, err := c.readTasks(ctx, ids.Val())
	return tasks, total.Val(), err
}

// pendingPageOne is PendingPage in c's shard: returns up to count IDs waiting at level from offset (0 is
// the head, the next to run), and the level's length.
func (c *Store) pendingPageOne(ctx context.Context, level int, offset, count int64) ([]string, int64, error) {
	if level < 0 || level >= c.cfg.Levels {
		return nil, 0, fmt.Errorf("%w: %d is outside 0..%d", ErrInvalidLevel, level, c.cfg.Levels-1)
	}
	if offset < 0 || count < 1 || count > maxPage {
		return nil, 0, fmt.Errorf("%w: PendingPage offset %d, count %d: want offset >= 0 and count 1..%d",
			ErrInvalidTask, offset, count, maxPage)
	}
	var ids *redis.StringSliceCmd
	var n *redis.IntCmd
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		ids = p.LRange(ctx, c.keys.pending(level), offset, offset+count-1)
		n = p.LLen(ctx, c.keys.pending(level))
		return nil
	})
	if err != nil {
		return nil, 0, wrapf(err, "pending page %d", level)
	}
	return ids.Val(), n.Val(), nil
}

// tasksOne is Tasks in c's shard: returns the records of ids in one round trip, in order; IDs
// without a record are left out, and records that cannot be decoded are
// returned with what could be read.
func (c *Store) tasksOne(ctx context.Context, ids []string) ([]*Task, error) {
	if len(ids) > maxPage {
		return nil, fmt.Errorf("%w: Tasks of %d IDs, at most %d", ErrInvalidTask, len(ids), maxPage)
	}
	return c.readTasks(ctx, ids)
}

func (c *Store) readTasks(ctx context.Context, ids []string) ([]*Task, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	vals := make([]*redis.SliceCmd, len(ids))
	dls := make([]*redis.FloatCmd, len(ids))
	_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			vals[i] = p.MGet(ctx, c.keys.task(id), c.keys.state(id), c.keys.checkpoint(id))
			dls[i] = p.ZScore(ctx, c.keys.leases(), id)
		}
		return nil
	})
	out := make([]*Task, 0, len(ids))
	for i, id := range ids {
		v, err := vals[i].Result()
		if err != nil {
			return out, wrapf(err, "read task %s", id)
		}
		if len(v) != 3 || v[0] == nil {
			continue // ended (deleted) since it was listed
		}
		t, _ := decodeTask(id, v[0], v[1], v[2])
		if ms := dls[i].Val(); ms > 0 && t.Token != "" {
			t.LeaseDeadline = msTime(int64(ms))
		}
		out = append(out, t)
	}
	return out, nil
}
