package runtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/require"
)

// Strict order across levels, FIFO within a level, with one worker.
func TestStrictOrderOneWorker(t *testing.T) {
	skipOnShards(t, "FIFO within a level holds per shard, not across shards")
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		var want []string
		var byLevel [3][]string
		for i, l := range []int{0, 1, 2, 0, 2, 1, 1, 0, 2} {
			id := enqueue(t, q, "job", string(rune('a'+i)), l)
			byLevel[l] = append(byLevel[l], id)
		}
		for l := 2; l >= 0; l-- {
			want = append(want, byLevel[l]...)
		}
		var mu sync.Mutex
		var got []string
		done := make(chan struct{})
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(ctx context.Context, tk *queue.TaskInfo) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, tk.ID)
			if len(got) == len(want) {
				close(done)
			}
			return nil
		})
		startRuntime(t, q, mux, runtime.Config{Concurrency: 1})
		receive(t, done, "all tasks")
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, want, got)
	})
}
