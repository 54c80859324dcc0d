package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// TestShardMasterDown: on a queue of three shards, while shard 1's master
// is down (every call on its keys refused), a worker runs the tasks of
// the other two, its heartbeats go on for them and say which shard did
// not answer, and nothing is taken for an outage of Redis; once the
// master is back, shard 1's tasks run too. Before, a heartbeat failed
// whole when one shard's call did ("heartbeat failed", an outage to the
// runtime's Redis watch); later, still when shard 0's did (the fleet-wide
// part, capacity, rates and pauses): it runs with shard 0 down too.
func TestShardMasterDown(t *testing.T) {
	for _, down := range []int{1, 0} {
		t.Run(fmt.Sprint("shard ", down), func(t *testing.T) { shardMasterDown(t, down) })
	}
}

// shardMasterDown is TestShardMasterDown with shard down's master down;
// the long task lives in another shard.
func shardMasterDown(t *testing.T, down int) {
	b := testredis.Mini(t)
	cfg := queue.Config{Namespace: b.Prefix, Shards: 3, LeaseDuration: 300 * time.Millisecond}
	producer := workerClient(t, b, cfg)
	h := testredis.NewRefuser(store.ShardTag(b.Prefix, producer.Config().Name, down))
	rdb := redis.NewClient(&redis.Options{Addr: b.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(h)
	q, err := queue.New(rdb, cfg)
	require.NoError(t, err)

	var mu sync.Mutex
	ran := map[string]bool{}
	mux := handlers.NewMux()
	mux.HandleFunc("t", func(_ context.Context, tk *queue.TaskInfo) error {
		mu.Lock()
		ran[tk.ID] = true
		mu.Unlock()
		return nil
	})
	// A long task of shard 0 outlives its LeaseDuration several times:
	// only the heartbeats keep its lease.
	var longRuns atomic.Int64
	longStarted, release, longEnded := make(chan struct{}, 4), make(chan struct{}), make(chan error, 4)
	mux.HandleFunc("long", func(ctx context.Context, _ *queue.TaskInfo) error {
		longRuns.Add(1)
		longStarted <- struct{}{}
		select {
		case <-release:
			longEnded <- nil
			return nil
		case <-ctx.Done():
			longEnded <- context.Cause(ctx)
			return ctx.Err()
		}
	})
	core, logs := observer.New(zapcore.InfoLevel)
	startRuntime(t, q, mux, runtime.Config{Concurrency: 4, PollInterval: fastPoll,
		HeartbeatInterval: 50 * time.Millisecond, Logger: zap.New(core)})

	// inShard enqueues n tasks whose IDs live in shard k.
	inShard := func(k, n int, tag string) []string {
		var ids []string
		for i := 0; len(ids) < n; i++ {
			if id := fmt.Sprintf("%s-%d", tag, i); store.ShardOf(id, 3) == k {
				ids = append(ids, id)
				_, err := producer.Enqueue(context.Background(), queue.NewTask("t", nil), queue.ID(id))
				require.NoError(t, err)
			}
		}
		return ids
	}
	allRan := func(ids []string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if !ran[id] {
					return false
				}
			}
			return true
		}
	}
	h.Set(true)
	longID := ""
	for i := 0; longID == ""; i++ {
		if id := fmt.Sprint("long-", i); store.ShardOf(id, 3) == (down+2)%3 {
			longID = id
		}
	}
	_, err = producer.Enqueue(context.Background(), queue.NewTask("long", nil), queue.ID(longID), queue.Level(2))
	require.NoError(t, err)
	receive(t, longStarted, "the long task to start")
	stuck := inShard(down, 5, "down")
	var up []string
	for k := range 3 {
		if k != down {
			up = append(up, inShard(k, 10, "up")...)
		}
	}
	require.Eventually(t, allRan(up), longWait, 10*time.Millisecond, "the other shards' tasks run")
	// 20 heartbeats that name the shard they missed: 1 s, over three
	// times the long task's LeaseDuration.
	require.Eventually(t, func() bool {
		return logs.FilterMessage("heartbeat: some shards did not answer").Len() >= 20
	}, longWait, 10*time.Millisecond, "the heartbeat names the shard it missed")
	close(release)
	require.NoError(t, <-longEnded, "the long task's lease held: its shard's heartbeats went on")
	require.EqualValues(t, 1, longRuns.Load(), "the long task ran once")
	require.Zero(t, logs.FilterMessage("heartbeat failed").Len(), "a heartbeat failed whole for one shard")
	for _, e := range logs.FilterMessageSnippet("redis unavailable").All() {
		t.Logf("logged: %s %v", e.Message, e.ContextMap())
	}
	require.Zero(t, logs.FilterMessageSnippet("redis unavailable").Len(), "one shard down taken for an outage")
	mu.Lock()
	for _, id := range stuck {
		require.False(t, ran[id], "its shard is down")
	}
	mu.Unlock()

	h.Set(false)
	require.Eventually(t, allRan(stuck), longWait, 10*time.Millisecond, "its tasks run once it is back")
}
