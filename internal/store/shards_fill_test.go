package store

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// TestShardFill: a task whose ID the store makes goes to the next shard
// when the one before's Enqueue group is idle (one caller at a time goes
// round the shards), and stays in a shard whose group is busy (a call in
// flight) for a run
// of shardRun, unless its master could not be reached (fillLeave); a
// shard to avoid is passed over for the next.
func TestShardFill(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		at := time.Unix(1000, 0)
		e.c.fill.clock = func() time.Time { return at } // no run ends by time here (TestShardFillSlowShard)
		for i := range 7 {
			got, err := e.c.Enqueue(e.ctx, NewTask("t", []byte(fmt.Sprint(i))))
			require.NoError(t, err)
			require.Equal(t, (i+1)%3, shardIndex(got.ID, 3), "task %d", i)
		}
		for k, s := range e.c.Shards() {
			want := int64(2)
			if k == 1 {
				want = 3
			}
			require.Equal(t, want, e.rdb.LLen(e.ctx, s.keys.pending(0)).Val(), "shard %d", k)
		}

		// Shard 1 took the last; with callers of its group waiting, the
		// next made IDs stay there for the rest of its run, then move on.
		busy := func(k, d int) { // a call of shard k's group in flight (d = 1), or back (-1)
			g := &e.c.shards[k].enqs
			g.mu.Lock()
			g.flushing += d
			g.mu.Unlock()
		}
		busy(1, 1)
		for i := 1; i < shardRun; i++ {
			require.Equal(t, 1, e.c.fillShard(nil), "ID %d of the run", i)
		}
		require.Equal(t, 2, e.c.fillShard(nil), "the run is full")
		busy(1, -1)
		require.Equal(t, 0, e.c.fillShard(nil), "shard 2 idle")

		// A shard whose master a call could not reach ends its run at
		// once, busy or not; leaving another shard changes nothing.
		busy(0, 1)
		require.Equal(t, 0, e.c.fillShard(nil))
		e.c.fillLeave(2)
		require.Equal(t, 0, e.c.fillShard(nil), "shard 2 is not the one filled")
		e.c.fillLeave(0)
		require.Equal(t, 1, e.c.fillShard(nil), "shard 0 left")
		busy(0, -1)

		// Shard 1 filled and busy: a task that avoids it goes to the next
		// shard it does not avoid; the run stays shard 1's.
		busy(1, 1)
		require.Equal(t, 2, e.c.fillShard([]bool{false, true, false}), "shard 1 avoided")
		require.Equal(t, 0, e.c.fillShard([]bool{false, true, true}), "shards 1 and 2 avoided")
		require.Equal(t, 1, e.c.fillShard(nil))
		busy(1, -1)
	})
}

// TestShardFillSlowShard: a single Enqueue whose shard's master does not
// answer keeps that shard's group busy; the run stays there only until
// shardRunFor has passed, then a made ID goes to the next shard and its
// Enqueue returns while the first still waits.
func TestShardFillSlowShard(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		h := &stallShard{tag: ShardTag(b.Prefix+".slow", "q", 1), release: make(chan struct{})}
		e := hookedEnv(t, b, h, "slow")
		var at atomic.Int64
		at.Store(time.Hour.Nanoseconds())
		e.c.fill.clock = func() time.Time { return time.Unix(0, at.Load()) }

		first := make(chan *Task, 1)
		go func() {
			tk, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("first")))
			assert.NoError(t, err)
			first <- tk
		}()
		require.Eventually(t, func() bool { return h.held.Load() > 0 }, 5*time.Second, time.Millisecond,
			"the first task goes to shard 1 and waits")
		require.Equal(t, 1, e.c.fillShard(nil), "shard 1 busy: the run stays")

		at.Add(shardRunFor.Nanoseconds())
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second) // fails, not hangs, if it went to shard 1
		defer cancel()
		second, err := e.c.Enqueue(ctx, NewTask("t", []byte("second")))
		require.NoError(t, err)
		require.Equal(t, 2, shardIndex(second.ID, 3), "the run is over: the next shard")
		select {
		case <-first:
			t.Fatal("the first task's call returned while shard 1 is held")
		default:
		}

		close(h.release)
		tk := <-first
		require.NotNil(t, tk)
		require.Equal(t, 1, shardIndex(tk.ID, 3))
	})
}

// stallShard holds every command on keys of tag until release closes
// (or the command's context ends), counting those it held.
type stallShard struct {
	tag     string
	release chan struct{}
	held    atomic.Int64
}

func (h *stallShard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *stallShard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *stallShard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && strings.Contains(s, h.tag) {
				h.held.Add(1)
				select {
				case <-h.release:
				case <-ctx.Done():
				}
				break
			}
		}
		return next(ctx, cmd)
	}
}

// TestNewIDIn: an ID made for shard k of n is there, is 32 hex digits,
// and is not made twice.
func TestNewIDIn(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range []int{2, 3, 6, 16} {
		for k := range n {
			for range 20 {
				id := newIDIn(k, n)
				require.Equal(t, k, shardIndex(id, n), "n=%d", n)
				require.Regexp(t, "^[0-9a-f]{32}$", id)
				require.False(t, seen[id], "made twice: %s", id)
				seen[id] = true
			}
		}
	}
}
