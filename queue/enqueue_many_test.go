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

// A batch across levels whose one level list holds the wrong type stores
// the tasks of the other levels; those of the broken level are refused
// with ErrCorrupt naming the list and leave no record behind.
func TestEnqueueBatchCorruptListRefusesItsLevelOnly(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.plant(e.c.keys.pending(2), "hash")
		batch := make([]*enqWait, 0, 4)
		for i, l := range []int{0, 2, 1, 2} {
			nt, ks, args, _, err := e.c.prepare(e.ctx, &Task{ID: string(rune('a' + i)), Type: "t"}, []Option{Level(l)})
			require.NoError(t, err)
			batch = append(batch, &enqWait{nt: nt, keys: ks, args: args})
		}
		errs := e.c.enqueueMany(e.ctx, batch)
		require.NoError(t, errs[0])
		require.NoError(t, errs[2])
		requireCorrupt(t, errs[1], e.c.keys.pending(2))
		requireCorrupt(t, errs[3], e.c.keys.pending(2))
		require.Equal(t, []string{"a"}, e.pending(0))
		require.Equal(t, []string{"c"}, e.pending(1))
		e.gone("b")
		e.gone("d")
	})
}
