package runtime_test

import (
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
// default) or for ever (a draining or non-preempting worker).
const deferBound = 2 * time.Second

// urgentAfter enqueues an urgent task and returns how long it took to start
// on worker want, or fails. With forever set it instead requires that the
// urgent task does NOT start within 500 ms: the stall the bound removes.
func (f *ptFleet) urgentAfter(t *testing.T, want string, forever bool) time.Duration {
	t.Helper()
	before := time.Now()
	u := enqueue(t, f.q, "urgent", "", 2)
	if forever {
		select {
		case at := <-f.urgent:
			t.Fatalf("urgent task started on %s while deferring forever", at.Worker)
		case <-time.After(500 * time.Millisecond):
		}
		return 0
	}
	at := ptRecv(t, f.urgent, "urgent run")
	took := time.Since(before)
	require.Equal(t, ptAt{u, want}, at)
	require.GreaterOrEqual(t, took, preempt.DefaultFleetDeferral, "it did not defer at all")
	require.Less(t, took, deferBound)
	t.Logf("urgent task started %v after enqueue", took)
	return took
}

// Each case leaves worker A saturated with a level-1 job while the fleet
// looks able to take an urgent task (a lower victim elsewhere) but will
// not: A defers for FleetDeferral, then preempts its own job.
func TestDeferenceIsBounded(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, f *ptFleet)
	}{
		{"dead busy worker", func(t *testing.T, f *ptFleet) {
			// A process that leased a level-0 job and was killed: its record
			// and its lease live on.
			enqueue(t, f.q, "job", "", 0)
			res, err := f.q.Lease(context.Background(), queue.LeaseRequest{Worker: "ghost"})
			require.NoError(t, err)
			require.Len(t, res.Tasks, 1)
			_, err = f.q.Heartbeat(context.Background(), queue.Heartbeat{Worker: "ghost", Capacity: 1,
				TTL: time.Minute, Leases: res.Tasks})
			require.NoError(t, err)
		}},
		{"draining worker", func(t *testing.T, f *ptFleet) {
			b := f.start(t, "B", runtime.Config{Concurrency: 1, DrainTimeout: time.Minute})
			f.jobOn(t, 0, "B")
			go func() { _ = b.Shutdown(context.Background()) }() // drains until the jobs are released
			t.Cleanup(f.doRelease)
		}},
		{"worker with preemption disabled", func(t *testing.T, f *ptFleet) {
			f.start(t, "B", runtime.Config{Concurrency: 1, Preemption: preempt.Policy{Disabled: true}})
			f.jobOn(t, 0, "B")
		}},
	}
	for _, tc := range cases {
		for _, forever := range []bool{false, true} {
			name := tc.name
			if forever {
				name += ", defer forever"
			}
			t.Run(name, func(t *testing.T) {
				testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
					f := newPtFleet(t, b, queue.Config{})
					t.Cleanup(f.doRelease)
					tc.setup(t, f)
					pol := preempt.Policy{}
					if forever {
						pol.FleetDeferral = preempt.DeferForever
					}
					rtA := f.start(t, "A", runtime.Config{Concurrency: 1, Preemption: pol})
					mid := f.jobOn(t, 1, "A")
					f.urgentAfter(t, "A", forever)
					if !forever {
						require.Equal(t, ptAt{mid, "A"}, ptRecv(t, f.cancelled, "A's own job gives way"))
						ptInvariant4(t, rtA)
					}
				})
			})
		}
	}
}

// The same with real worker processes killed with SIGKILL: an idle one
// (its free slots) and a busy one (its lower tasks).
func TestDeferenceKilledWorkerProcess(t *testing.T) {
	for _, busy := range []bool{false, true} {
		name := "idle"
		if busy {
			name = "busy"
		}
		t.Run(name, func(t *testing.T) {
			testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
				f := newPtFleet(t, b, queue.Config{})
				t.Cleanup(f.doRelease)
				proc := startWorkerProcess(t, b.Addr, b.Prefix, "victim-proc", 2)
				ctx := context.Background()
				var held []string
				if busy {
					held = []string{enqueue(t, f.q, "job", "", 0), enqueue(t, f.q, "job", "", 0)}
				}
				require.Eventually(t, func() bool {
					st, err := f.q.Stats(ctx)
					if err != nil || st.Workers < 1 {
						return false
					}
					for _, id := range held {
						if tk, err := f.q.Inspect(ctx, id); err != nil || tk.Worker != "victim-proc" {
							return false
						}
					}
					return true
				}, 20*time.Second, 10*time.Millisecond, "the worker process registers and takes its jobs")
				kill9(t, proc)

				rtA := f.start(t, "A", runtime.Config{Concurrency: 1})
				mid := f.jobOn(t, 1, "A")
				f.urgentAfter(t, "A", false)
				require.Equal(t, ptAt{mid, "A"}, ptRecv(t, f.cancelled, "A's own job gives way"))
				ptInvariant4(t, rtA)
			})
		})
	}
}
