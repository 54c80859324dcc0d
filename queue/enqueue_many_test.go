package queue

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// A batch of pending tasks is stored with one MSETNX; an ID that exists,
// or one that comes twice, sends the batch down the one-by-one path, where
// only that task is refused.
func TestEnqueueBatchAllPending(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("old", ID("exists"), Level(1))
		stored := func(ts []*Task) []bool {
			out, _ := e.c.EnqueueBatch(e.ctx, ts, Level(1))
			ok := make([]bool, len(out))
			for i, t := range out {
				ok[i] = t != nil
			}
			return ok
		}
		require.Equal(t, []bool{true, true}, stored([]*Task{{ID: "a", Type: "t"}, {ID: "b", Type: "t"}}))
		require.Equal(t, []bool{true, false}, stored([]*Task{{ID: "c", Type: "t"}, {ID: "c", Type: "t", Payload: []byte("x")}}))
		require.Equal(t, []bool{true, false, true}, stored([]*Task{{ID: "d", Type: "t"}, {ID: "exists", Type: "t"}, {ID: "e", Type: "t"}}))
		require.Equal(t, []string{"exists", "a", "b", "c", "d", "e"}, e.pending(1))
		require.Equal(t, []byte("old"), e.inspect("exists").Payload)
		require.Empty(t, e.inspect("c").Payload)
		e.requireCounts(counts{}, counts{Pending: 6})
		for _, tk := range e.lease("w", 6) {
			require.Equal(t, 1, tk.Level)
			require.Equal(t, "t", tk.Type)
		}
	})
}
