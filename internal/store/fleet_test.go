package store

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// run enqueues task id at level and leases it to worker w.
func (e *env) run(w, id string, level int, opts ...Option) *Task {
	e.t.Helper()
	e.enqueue("", append([]Option{ID(id), Level(level)}, opts...)...)
	res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: w, MinLevel: level})
	require.NoError(e.t, err)
	require.Len(e.t, res.Tasks, 1)
	require.Equal(e.t, id, res.Tasks[0].ID)
	return res.Tasks[0]
}

// beat sends a heartbeat for w and requires that no lease was lost.
func (e *env) beat(w string, capacity int, ttl time.Duration, leases ...*Task) {
	e.t.Helper()
	lost, err := lostOf(e.c.Heartbeat(e.ctx, Heartbeat{Worker: w, Capacity: capacity, TTL: ttl, Leases: leases}))
	require.NoError(e.t, err)
	require.Empty(e.t, lost)
}

func TestHeartbeatExtendsLeases(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		a, c := e.run("w1", "a", 1), e.run("w1", "c", 2)
		e.clk.Advance(defaultLeaseDuration - time.Second)
		e.beat("w1", 2, 0, a, c)
		dl := e.clk.Now().Add(defaultLeaseDuration)
		require.True(t, e.inspect("a").LeaseDeadline.Equal(dl))
		require.Equal(t, float64(dl.UnixMilli()), e.score(e.c.keys.leases(), "c"))

		// Past the original deadline, before the extended one.
		e.clk.Advance(defaultLeaseDuration - time.Millisecond)
		require.Empty(t, e.lease("w2", 5))
		require.ElementsMatch(t, []string{"a", "c"}, e.zset(e.c.keys.leases()))
		require.NoError(t, e.c.Ack(e.ctx, a))

		// A stale token and an acked task are reported lost; the rest extended.
		lost, err := lostOf(e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w1", Capacity: 2,
			Leases: []*Task{a, stale(c, "bogus"), c}}))
		require.NoError(t, err)
		require.Equal(t, []string{"a", "c"}, lost)
		require.Equal(t, float64(e.clk.Now().Add(defaultLeaseDuration).UnixMilli()), e.score(e.c.keys.leases(), "c"))
		require.Equal(t, []string{"c"}, e.zset(e.c.keys.leases()), "a lost lease is not re-created")

		// Without another heartbeat the lease expires and is recovered.
		e.clk.Advance(defaultLeaseDuration)
		require.Equal(t, []string{"c"}, ids(e.lease("w2", 5)))
		lost, err = lostOf(e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w1", Capacity: 2, Leases: []*Task{c}}))
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, lost)
	})
}

func TestHeartbeatWorkers(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		require.Zero(t, e.stats().Workers)
		e.beat("w1", 4, 0)
		e.beat("w2", 2, 5*time.Second)
		e.beat("w2", 2, 5*time.Second) // idempotent
		require.Equal(t, int64(2), e.stats().Workers)
		ws, err := e.c.Workers(e.ctx)
		require.NoError(t, err)
		now := e.clk.Now()
		require.Len(t, ws, 2)
		for i, want := range []WorkerInfo{
			{ID: "w1", Capacity: 4, LastHeartbeat: now, AliveUntil: now.Add(e.c.Config().LeaseDuration)},
			{ID: "w2", Capacity: 2, LastHeartbeat: now, AliveUntil: now.Add(5 * time.Second)},
		} {
			got := ws[i]
			require.Equal(t, []any{want.ID, want.Capacity, want.Busy}, []any{got.ID, got.Capacity, got.Busy})
			require.True(t, got.LastHeartbeat.Equal(want.LastHeartbeat), "%v", got.LastHeartbeat)
			require.True(t, got.AliveUntil.Equal(want.AliveUntil), "%v", got.AliveUntil)
		}

		e.clk.Advance(5*time.Second + time.Millisecond)
		require.Equal(t, int64(1), e.stats().Workers, "w2's TTL ran out")
		e.beat("w1", 4, 0) // sweeps w2's records
		require.Len(t, e.rdb.HGetAll(e.ctx, e.c.keys.capacity()).Val(), 1)
		ws, err = e.c.Workers(e.ctx)
		require.NoError(t, err)
		require.Len(t, ws, 1)
		require.Equal(t, "w1", ws[0].ID)
		require.Equal(t, []string{"w1"}, e.zset(e.c.keys.alive()))

		require.NoError(t, e.c.Deregister(e.ctx, "w1"))
		require.Zero(t, e.stats().Workers)
		require.Empty(t, e.rdb.HGetAll(e.ctx, e.c.keys.capacity()).Val())
		require.NoError(t, e.c.Deregister(e.ctx, "never-seen"))
		e.beat("w1", 1, 0)
		require.Equal(t, int64(1), e.stats().Workers)
	})
}

// A departed worker leaves no busy field behind: Deregister removes it when
// the worker holds no lease, else the release of its last lease does.
func TestDepartedWorkerBusyField(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("a"))
		e.enqueue("", ID("b"))
		e.beat("w1", 2, 0)
		e.beat("w2", 2, 0)
		a := e.leaseOne("w1")
		bt := e.leaseOne("w2")
		require.NoError(t, e.c.Ack(e.ctx, a))
		require.NoError(t, e.c.Deregister(e.ctx, "w1"))
		require.NoError(t, e.c.Deregister(e.ctx, "w2"))
		require.Equal(t, map[string]string{"w2": "1"}, e.rdb.HGetAll(e.ctx, e.c.keys.busy()).Val(),
			"w1 held nothing; w2 still holds b")
		require.NoError(t, e.c.Ack(e.ctx, bt))
		require.Empty(t, e.rdb.HGetAll(e.ctx, e.c.keys.busy()).Val())
	})
}

func TestReserveFleet(t *testing.T) {
	// Every case starts with w1 (capacity 1) running victim "v" at level 1
	// and "u" pending at level 2; w1 asks to reserve at MinLevel 2.
	cases := []struct {
		name  string
		setup func(e *env)
		req   func(r *ReserveRequest)
		want  error
	}{
		{name: "alone", setup: func(e *env) {}},
		{name: "other worker full", setup: func(e *env) {
			e.beat("w2", 1, 0, e.run("w2", "o", 1))
		}},
		{name: "free slot elsewhere", want: ErrFreeSlotInFleet, setup: func(e *env) {
			e.beat("w2", 2, 0, e.run("w2", "o", 1))
		}},
		{name: "idle worker elsewhere", want: ErrFreeSlotInFleet, setup: func(e *env) { e.beat("w3", 1, 0) }},
		{name: "own free slot does not count", setup: func(e *env) { e.beat("w1", 3, 0) }},
		{name: "shutting-down worker has no free slot", setup: func(e *env) { e.beat("w3", 0, 0) }},
		{name: "deregistered worker", setup: func(e *env) {
			e.beat("w3", 4, 0)
			require.NoError(e.t, e.c.Deregister(e.ctx, "w3"))
		}},
		{name: "expired worker", setup: func(e *env) {
			e.beat("w3", 4, time.Second)
			e.clk.Advance(time.Second + time.Millisecond)
		}},
		{name: "lower victim elsewhere", want: ErrLowerVictimElsewhere, setup: func(e *env) {
			e.beat("w2", 1, 0, e.run("w2", "o", 0))
		}},
		{name: "lower victim of a worker that is not alive is ignored", setup: func(e *env) {
			e.run("w2", "o", 0) // crashed or never registered: recovery, not preemption, frees it
		}},
		{name: "own lower task is not elsewhere", setup: func(e *env) {
			e.beat("w1", 2, 0, e.run("w1", "x", 0))
		}},
		{name: "equal level elsewhere is not lower", setup: func(e *env) {
			e.beat("w2", 1, 0, e.run("w2", "o", 1))
		}},
		{name: "non-preemptible lower task", setup: func(e *env) {
			e.beat("w2", 1, 0, e.run("w2", "o", 0, Preemptible(false)))
		}},
		{name: "lower level never preempted", req: func(r *ReserveRequest) { r.NeverPreempted = []int{0} }, setup: func(e *env) {
			e.beat("w2", 1, 0, e.run("w2", "o", 0))
		}},
		{name: "lower task under min run time", req: func(r *ReserveRequest) { r.MinRunTime = 10 * time.Second }, setup: func(e *env) {
			e.clk.Advance(10 * time.Second) // v ran long enough, o just started
			e.beat("w2", 1, 0, e.run("w2", "o", 0))
			e.clk.Advance(10*time.Second - time.Millisecond)
		}},
		{name: "lower task past min run time", want: ErrLowerVictimElsewhere, req: func(r *ReserveRequest) { r.MinRunTime = 10 * time.Second }, setup: func(e *env) {
			e.beat("w2", 1, 0, e.run("w2", "o", 0))
			e.clk.Advance(10 * time.Second)
		}},
		{name: "lower task at max preemptions", req: func(r *ReserveRequest) { r.MaxPreemptions = 1 }, setup: func(e *env) {
			o := e.run("w2", "o", 0)
			require.NoError(e.t, e.c.Requeue(e.ctx, o, RequeuePreempted))
			e.beat("w2", 1, 0, e.leaseOne("w2"))
		}},
		{name: "lower task under max preemptions", want: ErrLowerVictimElsewhere, req: func(r *ReserveRequest) { r.MaxPreemptions = 2 }, setup: func(e *env) {
			o := e.run("w2", "o", 0)
			require.NoError(e.t, e.c.Requeue(e.ctx, o, RequeuePreempted))
			e.beat("w2", 1, 0, e.leaseOne("w2"))
		}},
		{name: "free slot wins over lower victim", want: ErrFreeSlotInFleet, setup: func(e *env) {
			e.beat("w2", 2, 0, e.run("w2", "o", 0))
		}},
		{name: "IgnoreFleet skips a free slot", req: func(r *ReserveRequest) { r.IgnoreFleet = true }, setup: func(e *env) {
			e.beat("w3", 4, 0)
		}},
		{name: "IgnoreFleet skips a lower victim", req: func(r *ReserveRequest) { r.IgnoreFleet = true }, setup: func(e *env) {
			e.beat("w2", 1, 0, e.run("w2", "o", 0))
		}},
	}
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, nil)
				v := e.run("w1", "v", 1)
				e.beat("w1", 1, 0, v)
				tc.setup(e)
				e.enqueue("", ID("u"), Level(2))
				req := ReserveRequest{Worker: "w1", VictimID: "v", VictimLevel: 1, MinLevel: 2, MaxPreemptions: -1}
				if tc.req != nil {
					tc.req(&req)
				}
				busy, err := e.rdb.HGet(e.ctx, e.c.keys.busy(), "w1").Int()
				require.NoError(t, err)
				got, _, err := e.c.Reserve(e.ctx, req)
				if tc.want != nil {
					require.ErrorIs(t, err, tc.want)
					require.Nil(t, got)
					require.Equal(t, []string{"u"}, e.pending(2), "nothing reserved")
					require.Contains(t, e.zset(e.c.keys.running()), "v")
					return
				}
				require.NoError(t, err)
				require.Equal(t, "u", got.ID)
				require.Equal(t, "w1", got.Worker)
				require.NotEmpty(t, got.Token)
				require.NotContains(t, e.zset(e.c.keys.running()), "v", "the victim is spoken for")
				require.NotContains(t, e.zset(e.c.keys.running()), "u", "at the top level: never a victim, so not in the fleet's view")
				require.Equal(t, strconv.Itoa(busy+1), e.rdb.HGet(e.ctx, e.c.keys.busy(), "w1").Val())
				require.NoError(t, e.c.Requeue(e.ctx, v, RequeuePreempted))
				require.Equal(t, 1, e.inspect("v").Preemptions)
			})
		}
	})
}

func TestReserveLevels(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Levels = 4 })
		v := e.run("w1", "v", 0)
		e.beat("w1", 1, 0, v)
		e.enqueue("", ID("l1"), Level(1))
		req := ReserveRequest{Worker: "w1", VictimID: "v", VictimLevel: 0, MinLevel: 2, MaxPreemptions: -1}

		_, _, err := e.c.Reserve(e.ctx, req)
		require.ErrorIs(t, err, ErrNoTask, "nothing at MinLevel or above")
		require.Equal(t, []string{"l1"}, e.pending(1))

		e.enqueue("", ID("l3"), Level(3))
		e.enqueue("", ID("l2"), Level(2))
		req.NeverPreempt = []int{3}
		got, _, err := e.c.Reserve(e.ctx, req)
		require.NoError(t, err)
		require.Equal(t, "l2", got.ID, "level 3 never preempts, so it is skipped")
		require.Equal(t, []string{"l3"}, e.pending(3))

		req.NeverPreempt = []int{2, 3}
		_, _, err = e.c.Reserve(e.ctx, req)
		require.ErrorIs(t, err, ErrNoTask)

		req.MinLevel = 4
		_, _, err = e.c.Reserve(e.ctx, req)
		require.ErrorIs(t, err, ErrNoTask)
	})
}

// Two saturated workers reserving at once cannot both pick the same victim
// elsewhere: a successful reservation takes its victim out of the running set.
func TestReserveTakesVictimOutOfFleet(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		v0 := e.run("w1", "v0", 0)
		v1 := e.run("w2", "v1", 1)
		e.beat("w1", 1, 0, v0)
		e.beat("w2", 1, 0, v1)
		e.enqueue("", ID("u1"), Level(2))
		e.enqueue("", ID("u2"), Level(2))

		req2 := ReserveRequest{Worker: "w2", VictimID: "v1", VictimLevel: 1, MinLevel: 2, MaxPreemptions: -1}
		_, _, err := e.c.Reserve(e.ctx, req2)
		require.ErrorIs(t, err, ErrLowerVictimElsewhere, "w1's v0 is the fleet's lowest")

		got, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w1", VictimID: "v0", VictimLevel: 0, MinLevel: 1, MaxPreemptions: -1})
		require.NoError(t, err)
		require.Equal(t, "u1", got.ID)

		got, _, err = e.c.Reserve(e.ctx, req2)
		require.NoError(t, err, "v0 is already spoken for")
		require.Equal(t, "u2", got.ID)
		e.requireCounts(counts{Active: 1}, counts{Active: 1}, counts{Active: 2})
	})
}

// A victim named in a reservation leaves the fleet's running set; Rejoin
// puts it back (fenced by its token) when the caller did not preempt it.
func TestRejoin(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		v := e.run("w1", "v", 1)
		np := e.run("w1", "np", 0, Preemptible(false))
		e.beat("w1", 2, 0, v, np)
		e.enqueue("", ID("u"), Level(2))
		_, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w1", VictimID: "v", VictimLevel: 1, MinLevel: 2, MaxPreemptions: -1})
		require.NoError(t, err)
		require.NotContains(t, e.zset(e.c.keys.running()), "v")

		require.NoError(t, e.c.Rejoin(e.ctx, stale(v, "forged")))
		require.NotContains(t, e.zset(e.c.keys.running()), "v", "a stale holder changes nothing")
		require.NoError(t, e.c.Rejoin(e.ctx, v))
		require.Contains(t, e.zset(e.c.keys.running()), "v")
		require.Equal(t, float64(1), e.score(e.c.keys.running(), "v"), "at the level it runs at")
		require.NoError(t, e.c.Rejoin(e.ctx, np))
		require.NotContains(t, e.zset(e.c.keys.running()), "np", "never a non-preemptible task")

		require.NoError(t, e.rdb.ZRem(e.ctx, e.c.keys.running(), "v").Err())
		e.patchState("v", "al", "x")
		require.NoError(t, e.c.Rejoin(e.ctx, v), "a garbled level is no error")
		require.NotContains(t, e.zset(e.c.keys.running()), "v", "nor a member at a made-up level")
	})
}

// The fleet's running set holds the victims an urgent task may take:
// preemptible tasks below the top level. A task at the top level is below
// none, so neither a lease nor Rejoin puts it there, and an urgent task
// still finds the victims below it.
func TestRunningLeavesOutTopLevel(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		low := e.run("w1", "low", 0)
		mid := e.run("w1", "mid", 1)
		top := e.run("w1", "top", 2)
		require.Equal(t, []string{"low", "mid"}, e.zset(e.c.keys.running()))
		require.NoError(t, e.c.Rejoin(e.ctx, top))
		require.NotContains(t, e.zset(e.c.keys.running()), "top")
		e.beat("w1", 3, 0, low, mid, top)
		w2 := e.run("w2", "w2low", 0)
		e.beat("w2", 1, 0, w2)
		e.enqueue("", ID("u"), Level(2))
		_, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w1", VictimID: "mid", VictimLevel: 1, MinLevel: 2, MaxPreemptions: -1})
		require.ErrorIs(t, err, ErrLowerVictimElsewhere, "w2's level-0 task is below w1's victim")
	})
}
