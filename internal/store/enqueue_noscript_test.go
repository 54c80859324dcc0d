package store

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// flushMidPipeline sends the first half of the first pipeline, flushes the
// server's script cache, then sends the rest: the second half meets NOSCRIPT
// while the first half is stored, as when a server restarts mid-batch.
type flushMidPipeline struct {
	admin redis.UniversalClient
	armed atomic.Bool
}

func (h *flushMidPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *flushMidPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}

func (h *flushMidPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) < 2 || !h.armed.CompareAndSwap(true, false) {
			return next(ctx, cmds)
		}
		k := len(cmds) / 2
		err1 := next(ctx, cmds[:k])
		if err := h.admin.ScriptFlush(ctx).Err(); err != nil {
			return err
		}
		err2 := next(ctx, cmds[k:])
		if err1 != nil {
			return err1
		}
		return err2
	}
}

// A batch whose tail meets NOSCRIPT re-sends only the tail: every task is
// stored once and none is reported as a duplicate of itself.
func TestEnqueueBatchPartialNoScript(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		rdb := redis.NewClient(&redis.Options{Addr: b.Addr})
		t.Cleanup(func() { _ = rdb.Close() })
		hook := &flushMidPipeline{admin: b.Client}
		rdb.AddHook(hook)
		e := newEnvOn(t, rdb, b.Prefix+".noscript", nil)
		require.NoError(t, enqueueManyScript.Load(e.ctx, rdb).Err())
		require.NoError(t, enqueuePendingScript.Load(e.ctx, rdb).Err()) // its tasks are pending, their IDs made here
		old := enqueueChunk
		enqueueChunk = 2 // five chunks, so the pipeline can be split
		t.Cleanup(func() { enqueueChunk = old })
		hook.armed.Store(true)
		tasks := make([]*Task, 10)
		for i := range tasks {
			tasks[i] = NewTask("batch", []byte{byte(i)})
		}
		out, err := e.c.EnqueueBatch(e.ctx, tasks)
		require.NoError(t, err)
		for i, tk := range out {
			require.NotNil(t, tk, "task %d reported failed", i)
		}
		ids, err := e.c.Pending(e.ctx, 0)
		require.NoError(t, err)
		require.Len(t, ids, len(tasks))
		for i, id := range ids {
			require.Equal(t, out[i].ID, id, "FIFO order kept")
		}
	})
}
