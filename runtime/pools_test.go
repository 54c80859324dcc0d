package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// poolJobs runs "block" tasks until released or cancelled (returning the
// cause) and "quick" tasks at once; it tracks how many run per level.
type poolJobs struct {
	mu        sync.Mutex
	running   map[int]int
	maxByBand map[string]int
	band      func(level int) string
	started   chan *queue.TaskInfo
	ended     chan error
	release   chan struct{}
}

func newPoolJobs(band func(int) string) *poolJobs {
	return &poolJobs{running: map[int]int{}, maxByBand: map[string]int{}, band: band,
		started: make(chan *queue.TaskInfo, 256), ended: make(chan error, 256), release: make(chan struct{})}
}

func (j *poolJobs) mux() *handlers.Mux {
	mux := handlers.NewMux()
	mux.HandleFunc("block", func(ctx context.Context, tk *queue.TaskInfo) error {
		j.enter(tk)
		defer j.leave(tk)
		select {
		case <-ctx.Done():
			j.ended <- context.Cause(ctx)
			return context.Cause(ctx)
		case <-j.release:
			j.ended <- nil
			return nil
		}
	})
	mux.HandleFunc("quick", func(ctx context.Context, tk *queue.TaskInfo) error {
		j.enter(tk)
		j.leave(tk)
		return nil
	})
	return mux
}

func (j *poolJobs) enter(tk *queue.TaskInfo) {
	j.mu.Lock()
	j.running[tk.Level]++
	b, n := j.band(tk.Level), 0
	for l, c := range j.running {
		if j.band(l) == b {
			n += c
		}
	}
	j.maxByBand[b] = max(j.maxByBand[b], n)
	j.mu.Unlock()
	j.started <- tk
}

func (j *poolJobs) leave(tk *queue.TaskInfo) {
	j.mu.Lock()
	j.running[tk.Level]--
	j.mu.Unlock()
}

func highOrBulk(l int) string {
	if l >= 2 {
		return "high"
	}
	return "bulk"
}

// With a pool of its own, low-level work keeps running under an endless
// flood of high-level work, which never takes (or preempts) its slot; one
// pool of the same total size would run only the flood.
func TestPoolsLowBandProgressesUnderFlood(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		j := newPoolJobs(highOrBulk)
		defer close(j.release)
		rt := startRuntime(t, q, j.mux(), runtime.Config{Pools: []runtime.Pool{
			{Name: "high", Levels: []int{2}, Size: 2}, {Name: "bulk", Levels: []int{0, 1}, Size: 1}},
			PollInterval: 50 * time.Millisecond})
		require.Equal(t, 3, rt.Concurrency())
		for range 20 {
			enqueue(t, q, "block", "", 2) // never ends by itself: the flood
		}
		low := map[string]bool{}
		for range 5 {
			low[enqueue(t, q, "quick", "", 0)] = true
		}
		for len(low) > 0 {
			tk := receive(t, j.started, "a start")
			delete(low, tk.ID)
			if tk.Level < 2 {
				continue
			}
			enqueue(t, q, "block", "", 2) // the flood keeps coming
		}
		st, err := q.Stats(context.Background())
		require.NoError(t, err)
		require.Positive(t, st.Levels[2].Pending, "the flood still waits")
		j.mu.Lock()
		require.Equal(t, map[string]int{"high": 2, "bulk": 1}, j.maxByBand)
		j.mu.Unlock()
		require.Zero(t, rt.Stats().Preempted, "the flood never preempts the bulk pool's task")
		ps := rt.PoolStats()
		require.Equal(t, []int{2, 2}, []int{ps[0].Size, ps[0].Busy})
		require.Equal(t, "bulk", ps[1].Name)
	})
}

// A pool that may borrow runs its tasks in another pool's idle slot; when
// the owner's work arrives, the slot comes back: by preempting the
// borrowed task (ReclaimPreempt, the default), or when it ends
// (ReclaimWait).
func TestPoolsBorrowAndGiveBack(t *testing.T) {
	for _, mode := range []runtime.Reclaim{runtime.ReclaimPreempt, runtime.ReclaimWait} {
		name := map[runtime.Reclaim]string{runtime.ReclaimPreempt: "preempt", runtime.ReclaimWait: "wait"}[mode]
		t.Run(name, func(t *testing.T) {
			testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
				q := setup(t, b, queue.Config{})
				ctx := context.Background()
				j := newPoolJobs(highOrBulk)
				rt := startRuntime(t, q, j.mux(), runtime.Config{Pools: []runtime.Pool{
					{Name: "high", Levels: []int{2}, Size: 1, Borrow: true},
					{Name: "bulk", Levels: []int{0, 1}, Size: 1, Reclaim: mode}},
					PollInterval: time.Second})
				enqueue(t, q, "block", "", 2)
				enqueue(t, q, "block", "", 2)
				receive(t, j.started, "a high task")
				receive(t, j.started, "the high task in the borrowed slot")
				ps := rt.PoolStats()
				require.Equal(t, []int{1, 1}, []int{ps[0].Borrowed, ps[1].Lent}, "%+v", ps)

				owner := enqueue(t, q, "quick", "", 0)
				if mode == runtime.ReclaimWait {
					select {
					case tk := <-j.started:
						t.Fatalf("task %s (level %d) started while every slot is held", tk.ID, tk.Level)
					case <-time.After(300 * time.Millisecond):
					}
					close(j.release) // the high tasks end
				}
				for {
					tk := receive(t, j.started, "the bulk task")
					if tk.ID == owner {
						break
					}
				}
				if mode == runtime.ReclaimPreempt {
					err := receive(t, j.ended, "the borrowed task's end")
					require.ErrorIs(t, err, handlers.ErrPreempted)
					require.True(t, strings.Contains(err.Error(), "takes back"), err.Error())
					require.EqualValues(t, 1, rt.Stats().Preempted)
					close(j.release)
				}
				require.Eventually(t, func() bool {
					st, err := q.Stats(ctx)
					return err == nil && st.Levels[2].Pending == 0 && st.Levels[2].Active == 0 && st.Levels[0].Active == 0
				}, 10*time.Second, 10*time.Millisecond, "every task ends")
			})
		})
	}
}

// The README's free/paying example with waiting: the free pool borrows an
// idle paying slot, and paying (Reclaim: ReclaimWait) lets the borrowed
// task finish when its own work arrives. Neither the reclaim path nor
// ordinary preemption (whose victims include tasks in the pool's slots)
// cancels it, however often the dispatcher looks; the paying task starts
// once a slot frees.
func TestPoolsReclaimWaitLeavesBorrowedTask(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		j := newPoolJobs(func(l int) string { return map[bool]string{true: "paying", false: "free"}[l == 2] })
		rt := startRuntime(t, q, j.mux(), runtime.Config{Pools: []runtime.Pool{
			{Name: "paying", Levels: []int{2}, Size: 1, Reclaim: runtime.ReclaimWait},
			{Name: "free", Levels: []int{0, 1}, Size: 1, Borrow: true}},
			PollInterval: 20 * time.Millisecond}) // the dispatcher looks often
		enqueue(t, q, "block", "", 0)
		enqueue(t, q, "block", "", 1)
		receive(t, j.started, "a free task")
		receive(t, j.started, "the free task in the borrowed paying slot")
		ps := rt.PoolStats()
		require.Equal(t, []int{1, 1}, []int{ps[0].Lent, ps[1].Borrowed}, "%+v", ps)

		paying := enqueue(t, q, "quick", "", 2)
		require.Never(t, func() bool { return len(j.ended) > 0 || len(j.started) > 0 }, 500*time.Millisecond,
			10*time.Millisecond, "a borrowed task was cancelled (or the paying task started) while paying waits")
		require.Zero(t, rt.Stats().Preempted)
		close(j.release) // the free tasks end by themselves
		require.Equal(t, paying, receive(t, j.started, "the paying task").ID)
		for range 2 {
			require.NoError(t, receive(t, j.ended, "a free task's end"), "a free task was cancelled")
		}
		require.Zero(t, rt.Stats().Preempted)
	})
}

// Preemption stays inside a pool: an urgent task of the high pool preempts
// the high pool's lower task, not the bulk pool's lowest one.
func TestPoolsPreemptInsideThePool(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{Levels: 4})
		j := newPoolJobs(highOrBulk)
		defer close(j.release)
		rt := startRuntime(t, q, j.mux(), runtime.Config{Pools: []runtime.Pool{
			{Name: "high", Levels: []int{2, 3}, Size: 1}, {Name: "bulk", Levels: []int{0, 1}, Size: 1}}})
		bulk := enqueue(t, q, "block", "", 0)
		require.Equal(t, bulk, receive(t, j.started, "the bulk task").ID)
		mid := enqueue(t, q, "block", "", 2)
		require.Equal(t, mid, receive(t, j.started, "the level-2 task").ID)
		urgent := enqueue(t, q, "quick", "", 3)
		require.Equal(t, urgent, receive(t, j.started, "the urgent task").ID)
		var perr *handlers.PreemptedError
		require.True(t, errors.As(receive(t, j.ended, "the victim's end"), &perr))
		require.Equal(t, urgent, perr.ByID)
		require.EqualValues(t, 1, rt.Stats().Preempted)
		tk, err := q.Inspect(context.Background(), bulk)
		require.NoError(t, err)
		require.Equal(t, queue.StateActive, tk.State, "the bulk task runs on")
	})
}

func TestPoolsConfigErrors(t *testing.T) {
	q, err := queue.New(testredis.Backends(t)[0].Client, queue.Config{})
	require.NoError(t, err)
	for name, pools := range map[string][]runtime.Pool{
		"level in no pool":   {{Name: "a", Levels: []int{0, 1}, Size: 1}},
		"level in two pools": {{Name: "a", Levels: []int{0, 1}, Size: 1}, {Name: "b", Levels: []int{1, 2}, Size: 1}},
		"unknown level":      {{Name: "a", Levels: []int{0, 1, 2, 3}, Size: 1}},
		"empty name":         {{Levels: []int{0, 1, 2}, Size: 1}},
		"bad name":           {{Name: "a:b", Levels: []int{0, 1, 2}, Size: 1}},
		"repeated name":      {{Name: "a", Levels: []int{0}, Size: 1}, {Name: "a", Levels: []int{1, 2}, Size: 1}},
		"zero size":          {{Name: "a", Levels: []int{0, 1, 2}}},
		"no levels":          {{Name: "a", Levels: []int{0, 1, 2}, Size: 1}, {Name: "b", Size: 1}},
		"bad reclaim":        {{Name: "a", Levels: []int{0, 1, 2}, Size: 1, Reclaim: 7}},
	} {
		_, err := runtime.New(q, handlers.NewMux(), runtime.Config{Pools: pools})
		require.ErrorIs(t, err, runtime.ErrInvalidConfig, name)
	}
	pools := []runtime.Pool{{Name: "a", Levels: []int{0, 1, 2}, Size: 2}}
	_, err = runtime.New(q, handlers.NewMux(), runtime.Config{Pools: pools, Concurrency: 3})
	require.ErrorIs(t, err, runtime.ErrInvalidConfig, "Concurrency is not the total")
	_, err = runtime.New(q, handlers.NewMux(), runtime.Config{Pools: pools, Autoscale: &runtime.Autoscale{Min: 1, Max: 4}})
	require.ErrorIs(t, err, runtime.ErrInvalidConfig, "the runtime's Autoscale with pools")
	_, err = runtime.New(q, handlers.NewMux(), runtime.Config{Pools: []runtime.Pool{
		{Name: "a", Levels: []int{0, 1, 2}, Size: 5, Autoscale: &runtime.Autoscale{Min: 1, Max: 4}}}})
	require.ErrorIs(t, err, runtime.ErrInvalidConfig, "a pool's size outside its Autoscale bounds")
}

// In a fleet whose workers have pools, a worker's idle slots of another
// band do not hold urgent work back: each worker's heartbeat tells the
// fleet its pools, so the saturated high pools preempt at once instead of
// deferring (FleetDeferral) to a bulk slot that cannot take the task.
func TestPoolsFleetDoesNotDeferToOtherBands(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		f := newTestFleet(t, b, queue.Config{Levels: 4})
		t.Cleanup(f.doRelease)
		cfg := func() runtime.Config {
			return runtime.Config{Pools: []runtime.Pool{
				{Name: "high", Levels: []int{2, 3}, Size: 1}, {Name: "bulk", Levels: []int{0, 1}, Size: 1}}}
		}
		a := f.start(t, "A", cfg())
		f.jobOn(t, 2, "A")
		bw := f.start(t, "B", cfg())
		f.jobOn(t, 2, "B") // A's high pool is full; its bulk slot cannot take it
		u := enqueue(t, f.q, "urgent", "", 3)
		got := receive(t, f.urgent, "the urgent task's start")
		require.Equal(t, u, got.ID)
		receive(t, f.cancelled, "its victim gives way")
		for _, rt := range []*runtime.Runtime{a, bw} {
			require.Zero(t, rt.Stats().FleetDeferrals, "a worker deferred to a bulk slot")
		}
		require.EqualValues(t, 1, a.Stats().Preempted+bw.Stats().Preempted)
	})
}

// Workers with pools report rates per pool too, readable by any client.
func TestPoolsRates(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		var offset atomic.Int64
		q := setup(t, b, queue.Config{Clock: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
		ctx := context.Background()
		j := newPoolJobs(highOrBulk)
		rt, err := runtime.New(q, j.mux(), runtime.Config{Pools: []runtime.Pool{
			{Name: "high", Levels: []int{2}, Size: 1}, {Name: "bulk", Levels: []int{0, 1}, Size: 1}}})
		require.NoError(t, err)
		require.NoError(t, rt.Start(ctx))
		for _, l := range []int{2, 2, 1, 0, 0, 0} {
			enqueue(t, q, "quick", "", l)
		}
		require.Eventually(t, func() bool { return rt.Stats().Processed == 6 }, 10*time.Second, 5*time.Millisecond)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(sctx))
		offset.Store(int64(20 * time.Second))
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		w := queue.RateWindow.Seconds()
		require.Equal(t, map[string]queue.Rates{"high": {Processed: 2 / w}, "bulk": {Processed: 4 / w}}, st.PoolRates)
	})
}

// A pool with Autoscale grows with its own band's backlog, within its
// bounds, and shrinks when the backlog is gone; the other pools keep their
// size.
func TestPoolsAutoscale(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		j := newPoolJobs(highOrBulk)
		rt := startRuntime(t, q, j.mux(), runtime.Config{Pools: []runtime.Pool{
			{Name: "high", Levels: []int{2}, Autoscale: &runtime.Autoscale{Min: 1, Max: 3, Interval: 20 * time.Millisecond}},
			{Name: "bulk", Levels: []int{0, 1}, Size: 1}}})
		require.Equal(t, 2, rt.Concurrency())
		for range 5 {
			enqueue(t, q, "block", "", 2)
		}
		enqueue(t, q, "block", "", 0)
		for range 4 { // 3 high (the pool grew to its Max) and the bulk one
			receive(t, j.started, "a start")
		}
		require.Eventually(t, func() bool {
			ps := rt.PoolStats()
			return ps[0].Size == 3 && ps[0].Busy == 3 && ps[1].Size == 1 && rt.Concurrency() == 4
		}, 5*time.Second, 5*time.Millisecond)
		j.mu.Lock()
		require.Equal(t, map[string]int{"high": 3, "bulk": 1}, j.maxByBand)
		j.mu.Unlock()
		close(j.release) // every task ends; the two high ones left run and end too
		require.Eventually(t, func() bool {
			st, err := q.Stats(context.Background())
			return err == nil && st.Levels[2].Pending == 0 && rt.PoolStats()[0].Size == 1
		}, 10*time.Second, 5*time.Millisecond, "the pool shrinks back to its Min")
		require.Positive(t, rt.Stats().ScaledUp)
		require.Positive(t, rt.Stats().ScaledDown)
	})
}
