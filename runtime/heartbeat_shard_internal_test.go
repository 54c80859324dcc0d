package runtime

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// A heartbeat that shard 0 (capacity, counts, pauses) does not answer, on
// a queue of three shards whose others do, leaves the pauses this worker
// knows in force (the reply's are not the ones in force: were they
// applied, a paused level would be leased from again) and keeps the
// counts for the next heartbeat; once shard 0 answers, the counts go and
// its pauses are applied. The last counts, sent as the runtime stops,
// are said to be lost when shard 0 does not answer.
func TestHeartbeatWithoutShardZero(t *testing.T) {
	b := testredis.Mini(t)
	ctx := context.Background()
	cfg := queue.Config{Namespace: b.Prefix, Shards: 3}
	rdb := redis.NewClient(&redis.Options{Addr: b.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, cfg)
	require.NoError(t, err)
	h := testredis.NewRefuser(store.ShardTag(b.Prefix, q.Config().Name, 0))
	rdb.AddHook(h)
	core, logs := zapobserver.New(zapcore.WarnLevel)
	rt, err := New(q, handlers.NewMux(), Config{WorkerID: "w", Logger: zap.New(core)})
	require.NoError(t, err)

	require.NoError(t, q.Pause(ctx, 1, queue.PauseWait))
	require.NoError(t, rt.beats.send(ctx, nil, 1))
	require.Equal(t, queue.PauseWait, rt.dispatch.paused.mode(1), "the pause heard")

	h.Set(true)
	rt.outcomes.count(2, func(c *store.LevelCounts) { c.Processed++ })
	require.NoError(t, rt.beats.send(ctx, nil, 1), "shards 1 and 2 answered")
	require.Positive(t, h.Hits())
	require.Equal(t, queue.PauseWait, rt.dispatch.paused.mode(1), "the pause stays in force")
	levels, _ := rt.outcomes.take()
	require.EqualValues(t, 1, levels[2].Processed, "the count kept for the next heartbeat")
	rt.outcomes.restore(levels, nil)

	h.Set(false)
	require.NoError(t, q.Resume(ctx, 1))
	require.NoError(t, rt.beats.send(ctx, nil, 1))
	require.Equal(t, queue.NotPaused, rt.dispatch.paused.mode(1), "shard 0's pauses applied")
	levels, _ = rt.outcomes.take()
	require.Empty(t, levels, "the count went")

	// The last counts, as the runtime stops, cannot reach shard 0: said.
	h.Set(true)
	rt.outcomes.count(2, func(c *store.LevelCounts) { c.Processed++ })
	rt.beats.farewell(ctx)
	require.Equal(t, 1, logs.FilterMessage("could not report the last outcomes for the fleet's rates").Len())
}
