package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// prepPending prepares a task a level of levels each, their IDs made
// here (the tasks enqueue_pending.lua takes); every third is not
// preemptible.
func prepPending(t *testing.T, e *env, levels ...int) []*enqWait {
	t.Helper()
	ws := make([]*enqWait, len(levels))
	for i, l := range levels {
		w, err := e.c.prepare(e.ctx, NewTask("t", []byte(fmt.Sprint("p", i))), []Option{Level(l), Preemptible(i%3 != 2)})
		require.NoError(t, err)
		ws[i] = w
	}
	return ws
}

// A grouped call of pending tasks with IDs made here goes through
// enqueue_pending.lua, its tasks grouped by level: each level's list gets
// its tasks in the order they came, each record reads back as it was
// given (level, preemptibility, payload), and each caller gets its own
// answer.
func TestEnqueuePendingKeepsOrderWithinLevels(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		ws := prepPending(t, e, 2, 0, 1, 0, 2, 2)
		call, order := e.c.chunkCall(ws[0].now, len(ws), func(i int) *enqWait { return ws[i] })
		require.Same(t, enqueuePendingScript, call.script)
		require.Equal(t, []int{1, 3, 2, 0, 4, 5}, order)
		for _, err := range e.c.enqueueMany(e.ctx, ws) {
			require.NoError(t, err)
		}
		ids := func(is ...int) []string {
			var out []string
			for _, i := range is {
				out = append(out, ws[i].nt.ID)
			}
			return out
		}
		require.Equal(t, ids(1, 3), e.pending(0))
		require.Equal(t, ids(2), e.pending(1))
		require.Equal(t, ids(0, 4, 5), e.pending(2))
		for i, w := range ws {
			got := e.inspect(w.nt.ID)
			require.Equal(t, w.nt.Level, got.Level, "task %d", i)
			require.Equal(t, i%3 == 2, got.NotPreemptible, "task %d", i)
			require.Equal(t, fmt.Sprint("p", i), string(got.Payload), "task %d", i)
			require.Equal(t, StatePending, got.State, "task %d", i)
		}
		e.requireCounts(counts{Pending: 2}, counts{Pending: 1}, counts{Pending: 3})
	})
}

// A made ID whose record exists (planted here: a collision) is refused
// alone, with ErrDuplicateTask, and the record stays; the call's other
// tasks are stored and queued in order.
func TestEnqueuePendingIDExists(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		ws := prepPending(t, e, 1, 0, 1, 1)
		require.NoError(t, e.rdb.Set(e.ctx, e.c.keys.task(ws[2].nt.ID), "planted", 0).Err())
		errs := e.c.enqueueMany(e.ctx, ws)
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
		require.ErrorIs(t, errs[2], ErrDuplicateTask)
		require.NoError(t, errs[3])
		require.Equal(t, []string{ws[0].nt.ID, ws[3].nt.ID}, e.pending(1))
		require.Equal(t, []string{ws[1].nt.ID}, e.pending(0))
		v, err := e.rdb.Get(e.ctx, e.c.keys.task(ws[2].nt.ID)).Result()
		require.NoError(t, err)
		require.Equal(t, "planted", v)
	})
}

// A level whose list holds the wrong type refuses its tasks with
// ErrCorrupt naming the list, and leaves no record of them; the other
// levels' tasks are stored, on the MSETNX path and on the one-by-one one.
func TestEnqueuePendingCorruptList(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.plant(e.c.keys.pending(2), "hash")
		ws := prepPending(t, e, 2, 0, 2, 1)
		errs := e.c.enqueueMany(e.ctx, ws)
		requireCorrupt(t, errs[0], e.c.keys.pending(2))
		requireCorrupt(t, errs[2], e.c.keys.pending(2))
		require.NoError(t, errs[1])
		require.NoError(t, errs[3])
		e.gone(ws[0].nt.ID)
		e.gone(ws[2].nt.ID)
		require.Equal(t, []string{ws[1].nt.ID}, e.pending(0))
		require.Equal(t, []string{ws[3].nt.ID}, e.pending(1))

		ws = prepPending(t, e, 2, 1, 2)
		require.NoError(t, e.rdb.Set(e.ctx, e.c.keys.task(ws[2].nt.ID), "planted", 0).Err())
		errs = e.c.enqueueMany(e.ctx, ws)
		requireCorrupt(t, errs[0], e.c.keys.pending(2))
		require.NoError(t, errs[1])
		require.ErrorIs(t, errs[2], ErrDuplicateTask)
		e.gone(ws[0].nt.ID)
		require.Equal(t, []string{ws[1].nt.ID}, e.pending(1)[1:])
	})
}

// EnqueueBatch's chunks take enqueue_pending.lua too: with tasks of
// several levels over three chunks (enqueueChunk a call), each task's
// result is its own, in the order given, and each level's list holds its
// tasks in that order, and a refused task's error is its own. (The chunk size is not lowered here: the test runs
// in parallel with others that read it.)
func TestEnqueueBatchPendingChunks(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		n := 2*enqueueChunk + 7
		levels := make([]int, n)
		tasks := make([]*Task, n)
		for i := range tasks {
			levels[i] = (i*7 + i/5) % 3
			tasks[i] = NewTask("t", []byte(fmt.Sprint(i)))
		}
		out, err := e.c.EnqueueEach(e.ctx, tasks, func(i int) []Option { return []Option{Level(levels[i])} })
		require.NoError(t, err)
		want := map[int][]string{}
		for i, tk := range out {
			require.NotNil(t, tk, "task %d", i)
			require.Equal(t, levels[i], tk.Level, "task %d", i)
			want[levels[i]] = append(want[levels[i]], tk.ID)
		}
		for _, i := range []int{0, 1, enqueueChunk - 1, enqueueChunk, n - 1} {
			require.Equal(t, fmt.Sprint(i), string(e.inspect(out[i].ID).Payload), "task %d", i)
		}
		for l := range 3 {
			require.Equal(t, want[l], e.pending(l), "level %d", l)
		}

		// Each refusal reaches its own task: with level 1's list of the
		// wrong type, exactly the level 1 tasks fail, wherever the chunks'
		// grouping by level put them.
		e.plant(e.c.keys.pending(1), "hash")
		out, err = e.c.EnqueueEach(e.ctx, tasks, func(i int) []Option { return []Option{Level(levels[i])} })
		requireCorrupt(t, err, e.c.keys.pending(1))
		for i, tk := range out {
			require.Equal(t, levels[i] == 1, tk == nil, "task %d at level %d", i, levels[i])
		}
	})
}
