package runtime_test

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// deferBound is what the tests allow an urgent task, with the default
// policy, to wait when the fleet it defers to cannot take it: the 100 ms
// deferral plus scheduling noise on a loaded machine. Before bounded
// deference it waited for the other worker's record to expire (20.5 s by
// default) or for ever (a draining or non-preempting worker, one whose
// urgent task waits for its victim).
const deferBound = 2 * time.Second

// deadTTL is the liveness a worker with the default settings gives itself
// at each heartbeat (2 × 10 s + 0.5 s): a killed one looks alive that long.
const deadTTL = 20500 * time.Millisecond

// urgentAfter enqueues an urgent task at level and returns how long it took
// to start on worker want, or fails. With forever set it instead requires
// that the urgent task does NOT start within 500 ms: the stall the bound
// removes.
func (f *testFleet) urgentAfter(t *testing.T, level int, want string, forever bool) time.Duration {
	t.Helper()
	before := time.Now()
	u := enqueue(t, f.q, "urgent", "", level)
	if forever {
		select {
		case at := <-f.urgent:
			t.Fatalf("urgent task started on %s while deferring forever", at.Worker)
		case <-time.After(500 * time.Millisecond):
		}
		return 0
	}
	at := receive(t, f.urgent, "urgent run")
	took := time.Since(before)
	require.Equal(t, taskAt{u, want}, at)
	require.GreaterOrEqual(t, took, preempt.DefaultFleetDeferral, "it did not defer at all")
	require.Less(t, took, deferBound)
	t.Logf("urgent task started %v after enqueue", took)
	return took
}

// ghost registers worker "ghost" the way a worker process leaves Redis when
// it is SIGKILLed: one heartbeat with its capacity and leases, and no more.
func ghost(t *testing.T, q *queue.Client, capacity int, leases []*store.Task) {
	t.Helper()
	_, err := store.Of(q).Heartbeat(context.Background(), store.Heartbeat{Worker: "ghost", Capacity: capacity,
		TTL: deadTTL, Leases: leases})
	require.NoError(t, err)
}

// deferCase leaves the fleet looking able to take an urgent task (a free
// slot, or a lower victim elsewhere) while it will not. Worker A then runs
// a job at jobLevel, and an urgent task arrives at jobLevel+1: A defers for
// FleetDeferral, then preempts its own job.
type deferCase struct {
	name     string
	levels   int // queue levels; 0: the default 3
	jobLevel int // A's job; 1 unless set
	setup    func(t *testing.T, f *testFleet)
}

var deferCases = []deferCase{
	{name: "dead idle worker", setup: func(t *testing.T, f *testFleet) {
		ghost(t, f.q, 4, nil) // four free slots, for 20.5 s
	}},
	{name: "dead busy worker", setup: func(t *testing.T, f *testFleet) {
		// It leased a level-0 job and was killed: its record and its lease
		// live on, a lower victim than A's.
		enqueue(t, f.q, "job", "", 0)
		res, err := store.Of(f.q).Lease(context.Background(), store.LeaseRequest{Worker: "ghost"})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		ghost(t, f.q, 1, res.Tasks)
	}},
	{name: "draining worker", setup: func(t *testing.T, f *testFleet) {
		b := f.start(t, "B", runtime.Config{Concurrency: 1, DrainTimeout: time.Minute})
		f.jobOn(t, 0, "B")
		go func() { _ = b.Shutdown(context.Background()) }() // drains until the jobs are released
		t.Cleanup(f.doRelease)
	}},
	{name: "worker with preemption disabled", setup: func(t *testing.T, f *testFleet) {
		f.start(t, "B", runtime.Config{Concurrency: 1, Preemption: preempt.Policy{Disabled: true}})
		f.jobOn(t, 0, "B")
	}},
	{name: "worker waiting for its victim", levels: 4, jobLevel: 2, setup: func(t *testing.T, f *testFleet) {
		// B (StartAfterVictim) preempted a stubborn level-0 job for a
		// level-1 task, which waits for that victim to return: it counts as
		// B's running level-1 task, lower than A's level-2 job, but B has no
		// victim left to preempt for a level-3 task.
		b := f.start(t, "B", runtime.Config{Concurrency: 1, UrgentStart: runtime.StartAfterVictim,
			GracePeriod: time.Minute})
		f.runOn(t, "stubborn", 0, "B")
		enqueue(t, f.q, "job", "", 1)
		require.Eventually(t, func() bool { return b.Stats().Preempted == 1 }, longWait, 5*time.Millisecond,
			"B preempts its stubborn job")
	}},
}

// Each case with the default policy (the urgent task starts about
// FleetDeferral after its enqueue, on A, which preempts its own job) and
// with DeferForever (the stall of the first edition: it does not start).
func TestDeferenceIsBounded(t *testing.T) {
	for _, tc := range deferCases {
		for _, forever := range []bool{false, true} {
			name := tc.name
			if forever {
				name += ", defer forever"
			}
			t.Run(name, func(t *testing.T) {
				testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
					f := newTestFleet(t, b, queue.Config{Levels: tc.levels})
					t.Cleanup(f.doRelease)
					tc.setup(t, f)
					pol := preempt.Policy{}
					if forever {
						pol.FleetDeferral = preempt.DeferForever
					}
					level := max(tc.jobLevel, 1)
					rtA := f.start(t, "A", runtime.Config{Concurrency: 1, Preemption: pol})
					mid := f.jobOn(t, level, "A")
					f.urgentAfter(t, level+1, "A", forever)
					st := rtA.Stats()
					require.NotZero(t, st.FleetDeferrals, "A never deferred to the fleet")
					if forever {
						require.Zero(t, st.FleetOverrides)
						return
					}
					require.Equal(t, taskAt{mid, "A"}, receive(t, f.cancelled, "A's own job gives way"))
					require.EqualValues(t, 1, rtA.Stats().FleetOverrides)
					requireInvariant4(t, f.all()...)
				})
			})
		}
	}
}

// The same with real worker processes killed with SIGKILL: an idle one
// (its free slots) and a busy one (its lower tasks).
func TestDeferenceKilledWorkerProcess(t *testing.T) {
	for _, busy := range []bool{false, true} {
		for _, forever := range []bool{false, true} {
			name := map[bool]string{false: "idle", true: "busy"}[busy]
			if forever {
				name += ", defer forever"
			}
			t.Run(name, func(t *testing.T) {
				testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
					f := newTestFleet(t, b, queue.Config{})
					t.Cleanup(f.doRelease)
					proc := startWorkerProcess(t, b.Addr, b.Prefix, "victim-proc", 2)
					var held []string
					if busy {
						held = []string{enqueue(t, f.q, "job", "", 0), enqueue(t, f.q, "job", "", 0)}
					}
					ctx := context.Background()
					require.Eventually(t, func() bool {
						st, err := f.q.Stats(ctx)
						if err != nil || st.Workers < 1 {
							return false
						}
						for _, id := range held {
							if tk, err := store.Of(f.q).Inspect(ctx, id); err != nil || tk.Worker != "victim-proc" {
								return false
							}
						}
						return true
					}, 20*time.Second, 10*time.Millisecond, "the worker process registers and takes its jobs")
					kill9(t, proc)

					pol := preempt.Policy{}
					if forever {
						pol.FleetDeferral = preempt.DeferForever
					}
					rtA := f.start(t, "A", runtime.Config{Concurrency: 1, Preemption: pol})
					mid := f.jobOn(t, 1, "A")
					f.urgentAfter(t, 2, "A", forever)
					if !forever {
						require.Equal(t, taskAt{mid, "A"}, receive(t, f.cancelled, "A's own job gives way"))
						requireInvariant4(t, rtA)
					}
				})
			})
		}
	}
}
