package runtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// TestShardedLevelInterleaves: a backlog of one level spread over three
// shards drains from all three at once, not shard after shard. Each third
// of the drain takes at least a fifth of its tasks from every shard (an
// even share is a third). Before the lease rounds went round the shards
// (leaseStart), they kept starting at the shard just leased from, and one
// shard gave no task in the first 60% of such a drain: under a steady
// backlog its tasks would wait for the others' whole backlog.
func TestShardedLevelInterleaves(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		const shards, tasks = 3, 1500
		q := setup(t, b, queue.Config{Shards: shards})
		ctx := context.Background()
		batch := make([]*queue.Task, tasks)
		for i := range batch {
			batch[i] = queue.NewTask("noop", nil)
		}
		_, err := q.EnqueueBatch(ctx, batch)
		require.NoError(t, err)

		var mu sync.Mutex
		var seq []int // the shard of each task, in the order they ran
		all, done := closeOnce()
		mux := handlers.NewMux()
		mux.HandleFunc("noop", func(_ context.Context, ti *queue.TaskInfo) error {
			mu.Lock()
			defer mu.Unlock()
			seq = append(seq, store.ShardOf(ti.ID, shards))
			if len(seq) == tasks {
				done()
			}
			return nil
		})
		startRuntime(t, q, mux, runtime.Config{Concurrency: 16})
		receive(t, all, "every task ran")

		mu.Lock()
		defer mu.Unlock()
		var in [shards]int
		for _, k := range seq {
			in[k]++
		}
		for third := range 3 {
			part := seq[third*tasks/3 : (third+1)*tasks/3]
			var got [shards]int
			for _, k := range part {
				got[k]++
			}
			for k := range shards {
				if want := min(len(part)/5, in[k]/5); got[k] < want {
					t.Errorf("third %d of the drain: %d tasks of shard %d, want at least %d (per shard %v; shards' tasks %v)",
						third+1, got[k], k, want, got, in)
				}
			}
		}
	})
}
