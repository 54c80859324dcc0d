package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

func TestLeaseStrictOrder(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Levels = 5 })
		rng := rand.New(rand.NewPCG(1, 2))
		byLevel := make([][]string, 5)
		for i := range 40 {
			l := rng.IntN(5)
			id := fmt.Sprintf("t%02d-l%d", i, l)
			e.enqueue("", ID(id), Level(l))
			byLevel[l] = append(byLevel[l], id)
			e.clk.Advance(time.Millisecond)
		}
		var want []string
		for l := 4; l >= 0; l-- {
			want = append(want, byLevel[l]...)
		}
		var got []string
		for range want {
			got = append(got, e.leaseOne("w").ID)
		}
		require.Equal(t, want, got)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w"})
		require.NoError(t, err)
		require.Empty(t, res.Tasks)
		// The earliest lease deadline is what an idle worker waits for.
		require.True(t, res.NextDue.Equal(e.clk.Now().Add(defaultLeaseDuration)), "NextDue %v", res.NextDue)
	})
}

func TestLeaseCount(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		for i, l := range []int{0, 2, 1, 2, 0} {
			e.enqueue("", ID(fmt.Sprint("t", i)), Level(l))
		}
		now := e.clk.Now()
		got := e.lease("w1", 4)
		require.Equal(t, []string{"t1", "t3", "t2", "t0"}, ids(got))
		toks := map[string]bool{}
		for _, tk := range got {
			require.Equal(t, StateActive, tk.State)
			require.Equal(t, "w1", tk.Worker)
			require.NotEmpty(t, tk.Token)
			require.True(t, tk.LeaseDeadline.Equal(now.Add(defaultLeaseDuration)))
			toks[tk.Token] = true
			require.Equal(t, float64(now.Add(defaultLeaseDuration).UnixMilli()), e.score(e.c.keys.leases(), tk.ID))
		}
		// A lease is the pair of ID and token: the tasks of one call share
		// the call's token, and each call draws a new one.
		require.Len(t, toks, 1, "one token per call")
		e.requireCounts(counts{Pending: 1, Active: 1}, counts{Active: 1}, counts{Active: 2})
		next := e.lease("w2", 10)
		require.Equal(t, []string{"t4"}, ids(next))
		require.False(t, toks[next[0].Token], "a new call, a new token")
		require.Empty(t, e.lease("w2", 10))
	})
}

func TestLeaseMinLevel(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		for l := range 3 {
			e.enqueue("", ID(fmt.Sprint("l", l)), Level(l))
		}
		lease := func(minLevel int) []string {
			res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 3, MinLevel: minLevel})
			require.NoError(t, err)
			return ids(res.Tasks)
		}
		require.Empty(t, lease(3))
		require.Equal(t, []string{"l2", "l1"}, lease(1))
		require.Empty(t, lease(1))
		require.Equal(t, []string{"l0"}, lease(-1))

		_, err := e.c.Lease(e.ctx, LeaseRequest{})
		require.Error(t, err, "empty worker ID")
	})
}

// finishOps are the transitions a lease holder can make; each must be fenced.
var finishOps = []struct {
	name string
	do   func(e *env, t *Task) error
}{
	{"ack", func(e *env, t *Task) error { return e.c.Ack(e.ctx, t) }},
	{"retry", func(e *env, t *Task) error { return e.c.Retry(e.ctx, t, e.clk.Now(), "boom") }},
	{"kill", func(e *env, t *Task) error { return e.c.DeadLetter(e.ctx, t, "bad") }},
	{"requeue preempted", func(e *env, t *Task) error { return e.c.Requeue(e.ctx, t, RequeuePreempted) }},
	{"requeue shutdown", func(e *env, t *Task) error { return e.c.Requeue(e.ctx, t, RequeueShutdown) }},
	{"checkpoint", func(e *env, t *Task) error {
		_, err := e.c.SaveCheckpoint(e.ctx, t.ID, t.Token, []byte("evil"))
		return err
	}},
}

// snapshot is every key of a queue that a transition could touch.
type snapshot struct {
	rec                            *Task
	pending                        [][]string
	leases, sched, dead, run, busy any
}

func (e *env) snapshot(id string) snapshot {
	e.t.Helper()
	s := snapshot{rec: e.inspect(id)}
	for l := range e.c.Levels() {
		s.pending = append(s.pending, e.pending(l))
	}
	z := func(k string) any { v, _ := e.rdb.ZRangeWithScores(e.ctx, k, 0, -1).Result(); return v }
	s.leases, s.sched, s.dead, s.run = z(e.c.keys.leases()), z(e.c.keys.scheduled()), z(e.c.keys.dead()), z(e.c.keys.running())
	s.busy = e.rdb.HGetAll(e.ctx, e.c.keys.busy()).Val()
	return s
}

func TestFencingWrongToken(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, op := range finishOps {
			t.Run(op.name, func(t *testing.T) {
				e := newEnv(t, b, nil)
				e.enqueue("", ID("a"), Level(1))
				first := e.leaseOne("w1")
				require.NoError(t, e.c.Requeue(e.ctx, first, RequeueYield))
				cur := e.leaseOne("w1")
				_, err := e.c.SaveCheckpoint(e.ctx, cur.ID, cur.Token, []byte("good"))
				require.NoError(t, err)
				before := e.snapshot("a")
				for _, bad := range []*Task{stale(cur, "bogus"), stale(cur, ""), first, stale(cur, cur.Token+"x")} {
					requireLeaseLost(t, op.do(e, bad))
					require.Equal(t, before, e.snapshot("a"))
				}
				requireLeaseLost(t, op.do(e, &Task{Info: Info{ID: "missing"}, Token: cur.Token}))
				require.NoError(t, op.do(e, cur), "the holder's token still works")
			})
		}
	})
}

func TestLeaseRecovery(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("a"), Level(1))
		e.clk.Advance(time.Second)
		e.enqueue("", ID("b"), Level(1))
		old := e.leaseOne("w1")
		require.Equal(t, "a", old.ID)
		_, err := e.c.SaveCheckpoint(e.ctx, "a", old.Token, []byte("cp1"))
		require.NoError(t, err)
		e.enqueue("", ID("c"), Level(1))

		// Not yet expired: nothing is recovered.
		e.clk.Advance(defaultLeaseDuration - time.Millisecond)
		require.Empty(t, e.leaseMin("w2", 2))
		require.Equal(t, []string{"b", "c"}, e.pending(1))
		e.requireCounts(counts{}, counts{Pending: 2, Active: 1})

		// The deadline passed: the next Lease recovers it to the head.
		e.clk.Advance(time.Millisecond)
		require.Empty(t, e.leaseMin("w2", 2))
		require.Equal(t, []string{"a", "b", "c"}, e.pending(1))
		e.requireCounts(counts{}, counts{Pending: 3})
		rec := e.inspect("a")
		require.Equal(t, StatePending, rec.State)
		require.Equal(t, 1, rec.Recoveries)
		require.Zero(t, rec.Attempt)
		require.Zero(t, rec.Preemptions)
		require.Equal(t, []byte("cp1"), rec.Checkpoint)
		require.Empty(t, rec.Token)
		require.Empty(t, e.zset(e.c.keys.leases()))

		for _, op := range finishOps {
			requireLeaseLost(t, op.do(e, old))
		}
		lost, err := lostOf(e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w1", Capacity: 1, Leases: []*Task{old}}))
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, lost)

		// The new holder resumes from the checkpoint; only its token works.
		cur := e.leaseOne("w2")
		require.Equal(t, "a", cur.ID)
		require.Equal(t, []byte("cp1"), cur.Checkpoint)
		require.Equal(t, 1, cur.Recoveries)
		require.NotEqual(t, old.Token, cur.Token)
		for _, op := range finishOps {
			requireLeaseLost(t, op.do(e, old))
		}
		require.Equal(t, []byte("cp1"), e.inspect("a").Checkpoint, "stale holder cannot overwrite")
		require.NoError(t, e.c.Ack(e.ctx, cur))
		e.gone("a")
		require.Equal(t, []string{"b", "c"}, e.pending(1))
	})
}

// leaseMin leases only at minLevel or above, so a call can recover without
// taking level-1 tasks.
func (e *env) leaseMin(w string, minLevel int) []*Task {
	e.t.Helper()
	res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: w, MinLevel: minLevel})
	require.NoError(e.t, err)
	return res.Tasks
}

func TestLeaseSkipsDeletedRecord(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("a"))
		e.enqueue("", ID("b"))
		require.NoError(t, e.rdb.Del(e.ctx, e.c.keys.task("a")).Err())
		require.Equal(t, []string{"b"}, ids(e.lease("w", 2)))
		require.Empty(t, e.pending(0))
		e.requireCounts(counts{Active: 1})
		require.Equal(t, "1", e.rdb.HGet(e.ctx, e.c.keys.busy(), "w").Val())
	})
}

func TestLeaseMalformedRecord(t *testing.T) {
	cases := []struct{ name, rec string }{
		{"not a record", "garbage"},
		{"another schema", "1|2|1|5|25|0|1:t0:0:"},
		{"no type", "2|2|1|5|25|0|0:0:0:"},
		{"bad headers", "2|2|1|5|25|0|1:t0:1:{"},
		{"bad string length", "2|2|1|5|25|0|99:t"},
		{"bad max retries", "2|2|1|5|x|0|1:t0:0:"},
	}
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, nil)
				e.enqueue("", ID("good1"), Level(2))
				e.enqueue("", ID("bad"), Level(2))
				e.enqueue("", ID("good2"), Level(2))
				e.setRecord("bad", tc.rec)

				res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 3})
				require.NoError(t, err)
				require.Equal(t, []string{"good1", "good2"}, ids(res.Tasks))
				require.Len(t, res.Malformed, 1)
				m := res.Malformed[0]
				require.True(t, errors.Is(m.Err, ErrMalformedRecord) || errors.Is(m.Err, ErrSchema), "%v", m.Err)
				require.Contains(t, m.Err.Error(), `"bad"`)
				require.Equal(t, "bad", m.Task.ID)
				require.NotEmpty(t, m.Task.Token)
				e.requireCounts(counts{}, counts{}, counts{Active: 3})

				require.NoError(t, e.c.DeadLetter(e.ctx, m.Task, m.Err.Error()))
				dead, err := e.c.DeadTasks(e.ctx, 0, 10)
				require.NoError(t, err)
				require.Equal(t, []string{"bad"}, ids(dead))
				require.Equal(t, StateDead, dead[0].State)
				require.Contains(t, dead[0].LastError, "bad")
				require.Equal(t, []string{"bad"}, e.zset(e.c.keys.dead()))
				require.NotContains(t, e.zset(e.c.keys.leases()), "bad")
				e.requireCounts(counts{}, counts{}, counts{Active: 2, Dead: 1})
				require.Equal(t, "2", e.rdb.HGet(e.ctx, e.c.keys.busy(), "w").Val())
			})
		}
	})
}

// A due scheduled task whose level is garbled is dead-lettered with the
// reason, not pushed to a list nothing leases from; the counters stay
// consistent.
func TestPromoteMalformedLevel(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, val := range []string{"x", "7", "-1"} {
			t.Run("lvl="+val, func(t *testing.T) {
				e := newEnv(t, b, nil)
				e.enqueue("", ID("bad"), Level(1), ProcessIn(time.Second))
				e.requireCounts(counts{}, counts{Scheduled: 1})
				e.patchState("bad", "l", val)
				e.clk.Advance(time.Second)
				res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w"})
				require.NoError(t, err)
				require.Empty(t, res.Tasks)
				require.Empty(t, res.Malformed)
				require.Equal(t, []string{"bad"}, e.zset(e.c.keys.dead()))
				require.Empty(t, e.zset(e.c.keys.scheduled()))
				rec, err := e.c.Inspect(e.ctx, "bad")
				require.NoError(t, err)
				require.Equal(t, StateDead, rec.State)
				require.Contains(t, rec.LastError, "malformed record: bad level")
				e.requireCounts(counts{Dead: 1})
			})
		}
	})
}

// A malformed task whose holder crashed is recovered to the level it was
// leased from and handed out (as malformed) again: never lost.
func TestRecoverMalformedRecord(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("bad"), Level(1))
		e.setRecord("bad", "garbage")
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w"})
		require.NoError(t, err)
		require.Len(t, res.Malformed, 1)

		e.clk.Advance(defaultLeaseDuration)
		res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w2"})
		require.NoError(t, err)
		require.Len(t, res.Malformed, 1, "recovered and leased again")
		m := res.Malformed[0].Task
		require.Equal(t, "bad", m.ID)
		require.Equal(t, 1, m.Recoveries)
		require.True(t, slices.Contains(e.zset(e.c.keys.leases()), "bad"))
		require.NoError(t, e.c.DeadLetter(e.ctx, m, "malformed"))
		require.Equal(t, []string{"bad"}, e.zset(e.c.keys.dead()))
		require.Empty(t, e.zset(e.c.keys.leases()))
		require.Zero(t, e.stats().Levels[1].Active)
	})
}
