package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// Targets of the Redis protocol, second edition, guarded here on a real
// redis-server of our own. Both figures are counts, not timings: the same on
// every run, so the guard cannot flake.
const (
	maxCommandsPerTask = 8   // enqueue + lease + ack, commands inside Lua included
	maxBytesPerPending = 350 // used_memory per pending task, 100-byte payload
)

func commandCalls(t testing.TB, ctx context.Context, rdb *redis.Client) int64 {
	t.Helper()
	n, err := testredis.CommandCalls(ctx, rdb)
	require.NoError(t, err)
	return n
}

func usedMemory(t testing.TB, ctx context.Context, rdb *redis.Client) int64 {
	t.Helper()
	n, err := testredis.UsedMemory(ctx, rdb)
	require.NoError(t, err)
	return n
}

// commandsPerTask enqueues n tasks one Enqueue each, then leases them in
// calls of batch and acks each call's tasks in one grouped call, and
// returns the Redis commands spent per task (the INFO and CONFIG calls of
// the measurement excluded).
func commandsPerTask(t *testing.T, rdb *redis.Client, ns string, n, batch int) float64 {
	ctx := context.Background()
	c, err := New(rdb, Config{Namespace: ns})
	require.NoError(t, err)
	// Load the scripts first, so NOSCRIPT round trips are not counted.
	_, err = c.Enqueue(ctx, NewTask("warm", nil))
	require.NoError(t, err)
	res, err := c.Lease(ctx, LeaseRequest{Worker: "w", Count: 1})
	require.NoError(t, err)
	require.NoError(t, c.Ack(ctx, res.Tasks[0]))
	c.sweep.next.Store(0)

	require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	before := commandCalls(t, ctx, rdb) // CONFIG RESETSTAT counts itself; INFO too
	for i := 0; i < n; i++ {
		_, err := c.Enqueue(ctx, NewTask("noop", nil), Level(i%3))
		require.NoError(t, err)
	}
	done := 0
	for done < n {
		res, err := c.Lease(ctx, LeaseRequest{Worker: "w", Count: batch})
		require.NoError(t, err)
		require.NotEmpty(t, res.Tasks)
		ops := make([]finishOp, len(res.Tasks))
		for i, tk := range res.Tasks {
			ops[i] = finishOp{t: tk, mode: "ack"}
		}
		for _, err := range c.finishBatch(ctx, ops) {
			require.NoError(t, err)
		}
		done += len(res.Tasks)
	}
	after := commandCalls(t, ctx, rdb)
	return float64(after-before-1) / float64(n) // the INFO of "before" is counted in "after"
}

func TestCostGuard(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	rdb := srv.NewClient(t)
	ctx := context.Background()

	t.Run("commands per task", func(t *testing.T) {
		for _, batch := range []int{64, 8, 1} {
			got := commandsPerTask(t, rdb, fmt.Sprint("cost", batch), 1024, batch)
			t.Logf("batch %2d: %.2f Redis commands per processed task (enqueue + lease + ack)", batch, got)
			switch batch {
			case 64, 8:
				require.LessOrEqual(t, got, float64(maxCommandsPerTask), "batch %d", batch)
			case 1:
				// One task per call (a worker with one free slot at a time):
				// the fixed cost of a lease and an ack call is not shared.
				require.LessOrEqual(t, got, 25.0, "batch 1")
			}
		}
	})

	t.Run("bytes per pending task", func(t *testing.T) {
		require.NoError(t, rdb.FlushAll(ctx).Err())
		c, err := New(rdb, Config{})
		require.NoError(t, err)
		payload := []byte(strings.Repeat("p", 100))
		const n = 20000
		tasks := make([]*Task, 500)
		before := usedMemory(t, ctx, rdb)
		for i := 0; i < n; i += len(tasks) {
			for j := range tasks {
				tasks[j] = NewTask("email", payload)
			}
			_, err := c.EnqueueBatch(ctx, tasks, Level(1))
			require.NoError(t, err)
		}
		per := float64(usedMemory(t, ctx, rdb)-before) / n
		t.Logf("%.0f bytes of used_memory per pending task (100-byte payload, %d tasks)", per, n)
		require.LessOrEqual(t, per, float64(maxBytesPerPending))
	})
}
