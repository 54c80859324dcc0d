package store

import (
	"testing"
	"time"

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
		require.Equal(t, []bool{true, true}, stored([]*Task{{Info: Info{ID: "a", Type: "t"}}, {Info: Info{ID: "b", Type: "t"}}}))
		require.Equal(t, []bool{true, false}, stored([]*Task{{Info: Info{ID: "c", Type: "t"}}, {Info: Info{ID: "c", Type: "t", Payload: []byte("x")}}}))
		require.Equal(t, []bool{true, false, true}, stored([]*Task{{Info: Info{ID: "d", Type: "t"}}, {Info: Info{ID: "exists", Type: "t"}}, {Info: Info{ID: "e", Type: "t"}}}))
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
			w, err := e.c.prepare(e.ctx, &Task{Info: Info{ID: string(rune('a' + i)), Type: "t"}}, []Option{Level(l)})
			require.NoError(t, err)
			batch = append(batch, w)
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

// A grouped call across levels announces only the levels whose list was
// empty: a worker already has the others' announcement.
func TestEnqueueGroupWakesEmptyLevelsOnly(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("x", Level(1))
		sub := e.rdb.Subscribe(e.ctx, e.c.WakeChannel())
		defer sub.Close()
		_, err := sub.Receive(e.ctx) // subscription confirmed
		require.NoError(t, err)
		batch := make([]*enqWait, 0, 3)
		for _, l := range []int{0, 1, 2} {
			w, err := e.c.prepare(e.ctx, NewTask("t", nil), []Option{Level(l)})
			require.NoError(t, err)
			batch = append(batch, w)
		}
		for _, err := range e.c.enqueueMany(e.ctx, batch) {
			require.NoError(t, err)
		}
		// A marker published after the call: every wake of the call is
		// before it, in order.
		require.NoError(t, e.rdb.Publish(e.ctx, e.c.WakeChannel(), "end").Err())
		var got []string
		for {
			msg, err := sub.ReceiveMessage(e.ctx)
			require.NoError(t, err)
			if msg.Payload == "end" {
				break
			}
			got = append(got, msg.Payload)
		}
		require.Equal(t, []string{"0", "2"}, got)
	})
}

// EnqueueBatch's pipelined calls take the same one-pass path: a level
// whose list holds the wrong type refuses its tasks, the others are
// stored.
func TestEnqueueBatchCorruptListThroughPipeline(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.plant(e.c.keys.pending(2), "hash")
		out, err := e.c.EnqueueBatch(e.ctx, []*Task{{Info: Info{ID: "a", Type: "t"}}, {Info: Info{ID: "b", Type: "t"}}}, Level(2))
		requireCorrupt(t, err, e.c.keys.pending(2))
		require.Equal(t, []*Task{nil, nil}, out)
		e.gone("a")
		e.gone("b")
		out, err = e.c.EnqueueBatch(e.ctx, []*Task{{Info: Info{ID: "c", Type: "t"}}}, Level(1))
		require.NoError(t, err)
		require.Len(t, out, 1)
		require.Equal(t, []string{"c"}, e.pending(1))
	})
}

// On the one-by-one path (an ID in the batch exists), a wrong-typed list
// refuses only the tasks stored for it: the existing task's record, which
// the batch did not write, stays.
func TestEnqueueBatchCorruptListOneByOne(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("old", ID("exists"), Level(2))
		e.plant(e.c.keys.pending(2), "hash")
		batch := make([]*enqWait, 0, 3)
		for _, tc := range []struct {
			id    string
			level int
		}{{"a", 2}, {"exists", 2}, {"c", 1}} {
			w, err := e.c.prepare(e.ctx, &Task{Info: Info{ID: tc.id, Type: "t"}}, []Option{Level(tc.level)})
			require.NoError(t, err)
			batch = append(batch, w)
		}
		errs := e.c.enqueueMany(e.ctx, batch)
		requireCorrupt(t, errs[0], e.c.keys.pending(2))
		require.ErrorIs(t, errs[1], ErrDuplicateTask)
		require.NoError(t, errs[2])
		e.gone("a")
		require.Equal(t, []byte("old"), e.inspect("exists").Payload)
		require.Equal(t, []string{"c"}, e.pending(1))
	})
}

// A grouped call that mixes pending and delayed tasks stores each where it
// belongs (the one-by-one path).
func TestEnqueueGroupMixedPendingAndDelayed(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		batch := make([]*enqWait, 0, 3)
		for _, o := range []struct {
			id   string
			opts []Option
		}{{"a", []Option{Level(1)}}, {"s", []Option{Level(2), ProcessIn(time.Minute)}}, {"b", []Option{Level(0)}}} {
			w, err := e.c.prepare(e.ctx, &Task{Info: Info{ID: o.id, Type: "t"}}, o.opts)
			require.NoError(t, err)
			batch = append(batch, w)
		}
		for _, err := range e.c.enqueueMany(e.ctx, batch) {
			require.NoError(t, err)
		}
		require.Equal(t, []string{"b"}, e.pending(0))
		require.Equal(t, []string{"a"}, e.pending(1))
		require.Equal(t, []string{"s"}, e.zset(e.c.keys.scheduled()))
		require.Equal(t, StateScheduled, e.inspect("s").State)
		e.requireCounts(counts{Pending: 1}, counts{Pending: 1}, counts{Scheduled: 1})
	})
}
