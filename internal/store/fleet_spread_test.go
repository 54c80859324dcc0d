package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// runPreempted leases task id (at level) for worker w after it was
// preempted times times, as a victim that resumed.
func (e *env) runPreempted(w, id string, level, times int, opts ...Option) *Task {
	e.t.Helper()
	t := e.run(w, id, level, opts...)
	for range times {
		require.NoError(e.t, e.c.Requeue(e.ctx, t, RequeuePreempted))
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: w, MinLevel: level})
		require.NoError(e.t, err)
		require.Len(e.t, res.Tasks, 1)
		t = res.Tasks[0]
	}
	require.Equal(e.t, times, e.inspect(id).Preemptions)
	return t
}

// TestReserveFleetSpread: across the fleet, as in the runtime's own
// victim order (Policy.Choose of internal/victim), a task of the
// victim's level that was preempted fewer times gives way first, so a
// worker whose victim was preempted before defers to the worker that
// runs it (issue 30 row 4).
func TestReserveFleetSpread(t *testing.T) {
	cases := []struct {
		name      string
		victimPre int // times w1's victim "v" (level 1) was preempted
		setup     func(e *env)
		maxPre    int
		want      error
	}{
		{name: "less preempted task of the level elsewhere", victimPre: 1, want: ErrLowerVictimElsewhere, setup: func(e *env) {
			e.beat("w2", 1, 0, e.runPreempted("w2", "o", 1, 0))
		}},
		{name: "equally preempted task elsewhere", victimPre: 1, setup: func(e *env) {
			e.beat("w2", 1, 0, e.runPreempted("w2", "o", 1, 1))
		}},
		{name: "more preempted task elsewhere", victimPre: 1, setup: func(e *env) {
			e.beat("w2", 1, 0, e.runPreempted("w2", "o", 1, 2))
		}},
		{name: "victim never preempted", setup: func(e *env) {
			e.beat("w2", 1, 0, e.runPreempted("w2", "o", 1, 0))
		}},
		{name: "less preempted task at max preemptions", victimPre: 2, maxPre: 1, setup: func(e *env) {
			e.beat("w2", 1, 0, e.runPreempted("w2", "o", 1, 1))
		}},
		{name: "less preempted task under max preemptions", victimPre: 2, maxPre: 3, want: ErrLowerVictimElsewhere, setup: func(e *env) {
			e.beat("w2", 1, 0, e.runPreempted("w2", "o", 1, 1))
		}},
		{name: "less preempted non-preemptible task", victimPre: 1, setup: func(e *env) {
			e.beat("w2", 1, 0, e.runPreempted("w2", "o", 1, 0, Preemptible(false)))
		}},
		{name: "less preempted task of a worker that is not alive", victimPre: 1, setup: func(e *env) {
			e.runPreempted("w2", "o", 1, 0)
		}},
		{name: "own less preempted task is not elsewhere", victimPre: 1, setup: func(e *env) {
			e.beat("w1", 2, 0, e.runPreempted("w1", "x", 1, 0))
		}},
		{name: "less preempted task of a higher level", victimPre: 1, setup: func(e *env) {
			e.beat("w2", 1, 0, e.runPreempted("w2", "o", 2, 0))
		}},
	}
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, func(c *Config) { c.Levels = 4 })
				v := e.runPreempted("w1", "v", 1, tc.victimPre)
				e.beat("w1", 1, 0, v)
				tc.setup(e)
				e.enqueue("", ID("u"), Level(3))
				maxPre := tc.maxPre
				if maxPre == 0 {
					maxPre = -1
				}
				got, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w1", VictimID: "v", VictimLevel: 1,
					MinLevel: 2, MaxPreemptions: maxPre})
				if tc.want != nil {
					require.ErrorIs(t, err, tc.want)
					require.Nil(t, got)
					require.Equal(t, []string{"u"}, e.pending(3), "nothing reserved")
					return
				}
				require.NoError(t, err)
				require.Equal(t, "u", got.ID)
			})
		}
	})
}
