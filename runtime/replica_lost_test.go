package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// With WaitReplicas 1 and the replica killed under a running worker, an
// ack the replica did not confirm is not an outage and is not sent again
// (issue 30, row 6): before, every such ack was retried as if Redis were
// down ("redis unavailable; retrying ack", one Inspect each) and the
// queue slowed to a few tasks a second. The tasks all end, each once, and
// nothing is logged as an outage.
func TestReplicaLostAcksNotResent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two redis-servers")
	}
	primary := testredis.StartServer(t, testredis.ServerOptions{})
	replica := testredis.StartServer(t, testredis.ServerOptions{})
	ctx := context.Background()
	host, port, _ := strings.Cut(primary.Addr(), ":")
	require.NoError(t, replica.NewClient(t).ReplicaOf(ctx, host, port).Err())
	rdb := primary.NewClient(t)
	require.Eventually(t, func() bool {
		info, err := rdb.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
	}, 20*time.Second, 20*time.Millisecond, "the replica never came online")

	q, err := queue.New(rdb, queue.Config{Namespace: "replost", WaitReplicas: 1, WaitTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	const n = 150
	var runs atomic.Int64
	all := make(chan struct{})
	mux := handlers.NewMux()
	mux.HandleFunc("t", func(context.Context, *queue.TaskInfo) error {
		if runs.Add(1) == n {
			close(all)
		}
		return nil
	})
	core, logs := observer.New(zapcore.InfoLevel)
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 8, Logger: zap.New(core)})
	require.NoError(t, err)
	require.NoError(t, rt.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	})

	require.NoError(t, replica.Stop())
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint("r-", i)
		_, err := q.Enqueue(ctx, queue.NewTask("t", nil), queue.ID(ids[i]))
		require.ErrorIs(t, err, queue.ErrNotReplicated, "the replica is gone: not confirmed")
	}
	receive(t, all, "every task to run")
	for _, id := range ids {
		requireDeleted(t, q, id)
	}
	require.EqualValues(t, n, runs.Load(), "a task ran twice")
	require.Zero(t, logs.FilterMessageSnippet("redis unavailable").Len(), "an unconfirmed ack was taken for an outage")
	require.Zero(t, logs.FilterMessageSnippet("retrying").Len(), "an unconfirmed transition was sent again")
	require.Positive(t, logs.FilterMessage("the task's ack was not confirmed by the replicas").Len())
	require.EqualValues(t, n, rt.Stats().Processed)
}
