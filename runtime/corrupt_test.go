package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A wrong-typed key of the queue is logged as corruption (naming the key),
// not as an outage; the worker goes on with the levels that are sound, and
// once the key is fixed every task runs, none lost.
func TestCorruptKeysLoggedAndSurvived(t *testing.T) {
	skipOnShards(t, "it corrupts shard 0's keys by hand")
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		ctx := context.Background()
		prefix := "{" + b.Prefix + ":" + q.Name() + "}:"
		done := make(chan string, 10)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
			done <- tk.ID
			return nil
		})
		// Level 2's list is a hash: level 1 still runs.
		require.NoError(t, b.Client.HSet(ctx, prefix+"p:2", "oops", "1").Err())
		mid := enqueue(t, q, "job", "", 1)
		log, logs := observedLogger(t)
		startRuntime(t, q, mux, runtime.Config{Concurrency: 2, Logger: log, MaxRedisBackoff: 50 * time.Millisecond})
		require.Equal(t, mid, receive(t, done, "the level-1 task, past a corrupt level-2 list"))
		waitForLog(t, logs, "a corrupt level logged", func(e observer.LoggedEntry) bool {
			return e.Message == "corrupt queue key; leasing goes on without it" &&
				strings.Contains(e.ContextMap()["error"].(string), prefix+"p:2")
		})

		// busy holds a string: every lease fails closed, logged as corruption.
		require.NoError(t, b.Client.Rename(ctx, prefix+"busy", prefix+"busy.saved").Err())
		require.NoError(t, b.Client.Set(ctx, prefix+"busy", "oops", 0).Err())
		waiting := enqueue(t, q, "job", "", 0)
		waitForLog(t, logs, "corruption, not an outage", func(e observer.LoggedEntry) bool {
			return e.Message == "corrupt queue data; backing off" &&
				strings.Contains(e.ContextMap()["error"].(string), prefix+"busy")
		})
		require.Zero(t, logs.FilterMessage("redis unavailable; backing off").Len())
		require.NoError(t, b.Client.Del(ctx, prefix+"busy").Err())
		require.NoError(t, b.Client.Rename(ctx, prefix+"busy.saved", prefix+"busy").Err())
		require.Equal(t, waiting, receive(t, done, "the waiting task once the key is fixed"))
		waitGone(t, q, waiting)
	})
}

// A task whose record key holds another type is set aside and
// dead-lettered by the lease call itself: the runtime counts it in
// RunStats.Dead and logs it as a dead letter, and the queue counts it dead
// at its own level.
func TestSetAsideTaskCountedDead(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		ctx := context.Background()
		prefix := "{" + b.Prefix + ":" + q.Name() + "}:"
		bad := enqueue(t, q, "job", "", 2)
		require.NoError(t, b.Client.Del(ctx, prefix+"t:"+bad).Err())
		require.NoError(t, b.Client.HSet(ctx, prefix+"t:"+bad, "oops", "1").Err())
		log, logs := observedLogger(t)
		rt := startRuntime(t, q, handlers.NewMux(), runtime.Config{Concurrency: 1, Logger: log})
		waitForLog(t, logs, "the set-aside task logged as a dead letter", func(e observer.LoggedEntry) bool {
			return e.Message == "task dead-lettered" && e.ContextMap()["task_id"] == bad
		})
		require.EqualValues(t, 1, rt.Stats().Dead)
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, st.Levels[2].Dead, "counted dead at its own level")
		require.Zero(t, st.Levels[0].Dead)
	})
}
