package runtime_test

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Fleet-wide preemption: several runtimes (worker processes) share one
// queue, each with its own queue client and Redis connection.

// testFleet is a fleet of runtimes whose "job" tasks report where they run
// and block until released or cancelled, and whose "urgent" tasks report
// where they ran.
type testFleet struct {
	b    testredis.Backend
	qcfg queue.Config
	q    *queue.Client // the producer's client

	mu      sync.Mutex
	rts     map[string]*runtime.Runtime
	running map[string]string // job ID -> worker, while it runs

	started   chan taskAt // job starts
	cancelled chan taskAt // jobs cancelled by preemption
	urgent    chan taskAt // urgent runs
	release   chan struct{}
	doRelease func()
}

// taskAt is a task ID and the worker it ran on (job and stubborn starts,
// preempted jobs, urgent runs).
type taskAt struct{ ID, Worker string }

func newTestFleet(t *testing.T, b testredis.Backend, qcfg queue.Config) *testFleet {
	f := &testFleet{b: b, qcfg: qcfg, q: workerClient(t, b, qcfg), rts: map[string]*runtime.Runtime{},
		running: map[string]string{}, started: make(chan taskAt, 64), cancelled: make(chan taskAt, 64),
		urgent: make(chan taskAt, 64)}
	f.release, f.doRelease = closeOnce()
	return f
}

// start starts worker id with its own client; cfg.WorkerID is set to id.
func (f *testFleet) start(t *testing.T, id string, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(ctx context.Context, tk *queue.TaskInfo) error {
		f.mu.Lock()
		f.running[tk.ID] = id
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.running, tk.ID)
			f.mu.Unlock()
		}()
		f.started <- taskAt{tk.ID, id}
		select {
		case <-f.release:
			return nil
		case <-ctx.Done():
			if wasPreempted(ctx) {
				f.cancelled <- taskAt{tk.ID, id}
			}
			return ctx.Err()
		}
	})
	mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
		f.urgent <- taskAt{tk.ID, id}
		return nil
	})
	// A stubborn job ignores cancellation: it returns when released.
	mux.HandleFunc("stubborn", func(ctx context.Context, tk *queue.TaskInfo) error {
		f.started <- taskAt{tk.ID, id}
		<-f.release
		return nil
	})
	cfg.WorkerID = id
	if cfg.PollInterval == 0 {
		cfg.PollInterval = fastPoll
	}
	rt := startRuntime(t, workerClient(t, f.b, f.qcfg), mux, cfg)
	t.Cleanup(f.doRelease) // before this runtime's shutdown
	f.mu.Lock()
	f.rts[id] = rt
	f.mu.Unlock()
	return rt
}

func (f *testFleet) all() []*runtime.Runtime {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*runtime.Runtime, 0, len(f.rts))
	for _, rt := range f.rts {
		out = append(out, rt)
	}
	return out
}

// jobOn enqueues a job at level and waits until it starts on worker want.
func (f *testFleet) jobOn(t *testing.T, level int, want string) string {
	t.Helper()
	return f.runOn(t, "job", level, want)
}

// runOn enqueues a task of type typ ("job" or "stubborn") at level and
// waits until it starts on worker want.
func (f *testFleet) runOn(t *testing.T, typ string, level int, want string) string {
	t.Helper()
	id := enqueue(t, f.q, typ, "", level)
	got := receive(t, f.started, "start of job "+id)
	require.Equal(t, taskAt{id, want}, got)
	return id
}

// runningOn returns how many jobs run on each worker now.
func (f *testFleet) runningOn() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for _, w := range f.running {
		out[w]++
	}
	return out
}

// While any worker of the fleet has a free slot, nothing is preempted
// anywhere: the urgent task runs in the free slot.
func TestFleetNoPreemptionWhileAnySlotFree(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		f := newTestFleet(t, b, queue.Config{})
		for _, id := range []string{"A", "B", "C"} {
			f.start(t, id, runtime.Config{Concurrency: 2})
		}
		// Five jobs fill five of the six slots, wherever they land.
		jobs := map[string]bool{}
		for range 5 {
			jobs[enqueue(t, f.q, "job", "", 0)] = true
		}
		for range 5 {
			require.True(t, jobs[receive(t, f.started, "job start").ID])
		}
		var free string
		for w, n := range f.runningOn() {
			require.LessOrEqual(t, n, 2)
			if n < 2 {
				free = w
			}
		}
		require.NotEmpty(t, free)
		// Each urgent task, in turn, runs in the one free slot; every
		// saturated worker is woken too and must not preempt.
		for i := range 20 {
			u := enqueue(t, f.q, "urgent", fmt.Sprint(i), 2)
			require.Equal(t, taskAt{u, free}, receive(t, f.urgent, "urgent run"))
			requireDeleted(t, f.q, u)
		}
		require.Empty(t, f.cancelled, "a job was preempted although a slot was free")
		require.Len(t, f.runningOn(), 3)
		// (A worker may still reserve an urgent task for a slot that frees
		// while the reservation is in flight; it must not preempt for it.)
		require.Zero(t, sumStats(f.all()...).Preempted)
		requireInvariant4(t, f.all()...)
	})
}

// With every worker saturated, the victim is the lowest-level preemptible
// task of the whole fleet: A and C run level-1 jobs, B a level-0 job; an
// urgent level-2 task preempts B's job, twice in a row.
func TestFleetVictimIsLowestInFleet(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		f := newTestFleet(t, b, queue.Config{})
		rtB := f.start(t, "B", runtime.Config{Concurrency: 1})
		low := f.jobOn(t, 0, "B")
		rtA := f.start(t, "A", runtime.Config{Concurrency: 2})
		f.jobOn(t, 1, "A")
		f.jobOn(t, 1, "A")
		rtC := f.start(t, "C", runtime.Config{Concurrency: 1})
		f.jobOn(t, 1, "C")

		for round := range 2 {
			u := enqueue(t, f.q, "urgent", fmt.Sprint(round), 2)
			require.Equal(t, taskAt{low, "B"}, receive(t, f.cancelled, "preemption"), "round %d", round)
			require.Equal(t, taskAt{u, "B"}, receive(t, f.urgent, "urgent run"), "round %d", round)
			// The victim comes back on B, the only worker with room.
			require.Equal(t, taskAt{low, "B"}, receive(t, f.started, "victim resumes"), "round %d", round)
			requireDeleted(t, f.q, u)
		}
		require.Empty(t, f.cancelled, "a higher-level job was preempted")
		require.Equal(t, map[string]int{"A": 2, "B": 1, "C": 1}, f.runningOn())
		stA, stB, stC := rtA.Stats(), rtB.Stats(), rtC.Stats()
		require.EqualValues(t, 2, stB.Preempted)
		require.EqualValues(t, 2, stB.Reserved)
		require.Zero(t, stA.Preempted+stA.Reserved)
		require.Zero(t, stC.Preempted+stC.Reserved)
		requireInvariant4(t, rtA, rtB, rtC)
		f.doRelease()
		requireDeleted(t, f.q, low)
	})
}

// A worker that shut down deregisters: its capacity no longer counts as
// free, so a saturated worker preempts at once instead of waiting for the
// departed worker's record to expire (2 heartbeat intervals, 20 s here).
func TestFleetShutdownWorkerNotCountedFree(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		f := newTestFleet(t, b, queue.Config{})
		rtA := f.start(t, "A", runtime.Config{Concurrency: 1})
		low := f.jobOn(t, 0, "A")
		rtB := f.start(t, "B", runtime.Config{Concurrency: 1})
		ctx, cancel := context.WithTimeout(context.Background(), longWait)
		defer cancel()
		require.NoError(t, rtB.Shutdown(ctx))

		before := time.Now()
		u := enqueue(t, f.q, "urgent", "", 2)
		require.Equal(t, taskAt{low, "A"}, receive(t, f.cancelled, "preemption on A"))
		require.Equal(t, taskAt{u, "A"}, receive(t, f.urgent, "urgent run"))
		require.Less(t, time.Since(before), 5*time.Second, "preemption waited for the departed worker's record to expire")
		require.Equal(t, taskAt{low, "A"}, receive(t, f.started, "victim resumes"))
		require.EqualValues(t, 1, rtA.Stats().Preempted)
		require.Zero(t, rtB.Stats().Reserved)
		requireInvariant4(t, rtA, rtB)
	})
}

// A worker that died without deregistering still looks free until its
// record expires. With the default policy the saturated worker defers to it
// only for FleetDeferral (100 ms), then preempts; with DeferForever it
// waits for the record to expire (the first edition's 20 s stall).
func TestFleetDeadWorkerRecordExpires(t *testing.T) {
	cases := []struct {
		name     string
		deferral time.Duration
	}{{"bounded deference", 0}, {"defer forever", preempt.DeferForever}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
				const ttl = 1500 * time.Millisecond
				f := newTestFleet(t, b, queue.Config{})
				rtA := f.start(t, "A", runtime.Config{Concurrency: 1, Preemption: preempt.Policy{FleetDeferral: tc.deferral}})
				low := f.jobOn(t, 0, "A")

				// "ghost" reports 4 free slots once and dies.
				before := time.Now()
				_, err := store.Of(f.q).Heartbeat(context.Background(), store.Heartbeat{Worker: "ghost", Capacity: 4, TTL: ttl})
				require.NoError(t, err)
				u := enqueue(t, f.q, "urgent", "", 2)
				at := receive(t, f.urgent, "urgent run")
				took := time.Since(before)
				require.Equal(t, taskAt{u, "A"}, at)
				t.Logf("urgent task started %v after enqueue", took)
				if tc.deferral == preempt.DeferForever {
					require.GreaterOrEqual(t, took, ttl, "preempted while a live worker had free slots")
				} else {
					require.GreaterOrEqual(t, took, preempt.DefaultFleetDeferral, "no deference at all")
					require.Less(t, took, ttl, "deferred to a dead worker until its record expired")
				}
				require.Equal(t, taskAt{low, "A"}, receive(t, f.cancelled, "preemption on A"))
				require.EqualValues(t, 1, rtA.Stats().Preempted)
				requireInvariant4(t, rtA)
			})
		})
	}
}
