package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

// A task the dispatcher returns to the fleet's running set while Redis
// cannot be reached (or the queue's slot migrates, which refuses the call
// the same way until it ends) is returned once Redis answers again, while
// this worker still runs it. Before, the one failed try was logged and the
// task stayed out of the set: no other worker could pick it as a victim.
func TestRejoinRetriedAfterOutage(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	q, err := queue.New(rdb, queue.Config{Namespace: "rejoin", Levels: 3})
	require.NoError(t, err)
	core, logs := zapobserver.New(zap.DebugLevel)
	started := make(chan *queue.TaskInfo, 1)
	release := make(chan struct{})
	mux := handlers.NewMux()
	mux.HandleFunc("x", func(_ context.Context, tk *queue.TaskInfo) error {
		started <- tk
		<-release
		return nil
	})
	rt, err := New(q, mux, Config{WorkerID: "w", Logger: zap.New(core), MaxRedisBackoff: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, rt.Start(ctx))
	defer func() {
		close(release)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(sctx))
	}()
	_, err = q.Enqueue(ctx, queue.NewTask("x", nil, queue.Level(0)))
	require.NoError(t, err)
	info := <-started
	tk := rt.slots.lookup(info.ID).t
	running := "{rejoin:default}:running"
	require.EqualValues(t, 1, rdb.ZRem(ctx, running, tk.ID).Val(), "not in the running set") // as a reservation does

	m.Close() // Redis goes away
	rt.rejoin(tk)
	require.Eventually(t, func() bool {
		return logs.FilterMessageSnippet("could not return a task to the fleet's running set").Len() == 1
	}, 10*time.Second, time.Millisecond, "the first try did not fail")
	require.NoError(t, m.Restart())
	if !assert.Eventually(t, func() bool { return rdb.ZScore(ctx, running, tk.ID).Err() == nil }, 10*time.Second,
		5*time.Millisecond, "the task never got back into the running set") {
		for _, e := range logs.All() {
			t.Logf("%v %s %v", e.Time.Format("05.000"), e.Message, e.ContextMap())
		}
	}
	require.Eventually(t, func() bool { return logs.FilterMessage("task back in the fleet's running set").Len() == 1 },
		5*time.Second, time.Millisecond)
}
