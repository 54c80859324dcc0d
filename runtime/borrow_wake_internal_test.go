package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// quietWaker records announcements without waking the dispatcher while
// quiet is set: the moment between an announcement's raise and its kick,
// held open.
type quietWaker struct {
	waker
	inbox *inbox
	quiet *atomic.Bool
}

func (w quietWaker) announced(l int, isLevel bool) {
	if w.quiet.Load() && isLevel {
		w.inbox.raise(int64(l))
		return
	}
	w.waker.announced(l, isLevel)
}

// A pool that borrows never preempts while another pool's slot is free,
// even when the dispatcher sees an announcement before its kick (a lease
// call ended meanwhile, and nothing else woke it since that call went
// out): the free slot is for a lease. Before the guard in dispatch, the
// free pool's level-1 task preempted its level-0 task here while the
// paying slot stood idle (TestPoolsReclaimWaitLeavesBorrowedTask failed
// so once in CI).
func TestBorrowerDoesNotPreemptBesideFreeSlot(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	rdb := srv.NewClient(t)
	hook := newLeaseHold(false)
	rdb.AddHook(hook)
	q, err := queue.New(rdb, queue.Config{Name: "borrow-wake"})
	require.NoError(t, err)
	started := make(chan int, 4)
	canceled := make(chan error, 4)
	release := make(chan struct{})
	mux := handlers.NewMux()
	mux.HandleFunc("block", func(ctx context.Context, ti *queue.TaskInfo) error {
		started <- ti.Level
		select {
		case <-ctx.Done():
			canceled <- context.Cause(ctx)
			return context.Cause(ctx)
		case <-release:
			return nil
		}
	})
	rt, err := New(q, mux, Config{PollInterval: time.Minute, Pools: []Pool{
		{Name: "paying", Levels: []int{2}, Size: 1, Reclaim: ReclaimWait},
		{Name: "free", Levels: []int{0, 1}, Size: 1, Borrow: true}}})
	require.NoError(t, err)
	quiet := &atomic.Bool{}
	rt.wakes.to = quietWaker{waker: rt.wakes.to, inbox: &rt.dispatch.inbox, quiet: quiet}
	ctx := context.Background()
	startForTest(t, rt)
	t.Cleanup(func() { close(release) }) // before the shutdown (cleanups run last first)

	_, err = q.Enqueue(ctx, queue.NewTask("block", nil), queue.Level(0))
	require.NoError(t, err)
	require.Equal(t, 0, within(t, started, "the level-0 task did not start"))
	require.Eventually(t, func() bool { ps := rt.PoolStats(); return ps[1].Busy == 1 }, 10*time.Second, time.Millisecond,
		"the level-0 task holds the free pool's own slot")

	// A lease call goes out for the idle paying slot and finds nothing;
	// its reply is held while a level-1 task is announced without a kick.
	require.Eventually(t, func() bool {
		inFlight, _ := rt.dispatch.book.state()
		return inFlight == 0 && len(rt.dispatch.inbox.kick) == 0
	}, 10*time.Second, time.Millisecond, "the dispatcher settles")
	hook.armed.Store(true)
	rt.dispatch.signal()
	within(t, hook.held, "no lease call")
	require.Eventually(t, func() bool { return len(rt.dispatch.inbox.kick) == 0 }, 10*time.Second, time.Millisecond,
		"the dispatcher took the signal")
	quiet.Store(true)
	_, err = q.Enqueue(ctx, queue.NewTask("block", nil), queue.Level(1))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rt.dispatch.inbox.mask.Load()&(1<<1) != 0 }, 10*time.Second, time.Millisecond,
		"the level-1 announcement reached the inbox")
	reserves := hook.reserves.Load()
	close(hook.release) // the call ends: the dispatcher looks, with no kick since it went out

	require.Never(t, func() bool { return hook.reserves.Load() > reserves || len(canceled) > 0 }, 300*time.Millisecond,
		5*time.Millisecond, "the free pool tried a preemption while the paying slot was idle")

	quiet.Store(false)
	rt.dispatch.signal() // the kick arrives: a lease, into the borrowed slot
	require.Equal(t, 1, within(t, started, "the level-1 task did not start in the borrowed slot"))
	ps := rt.PoolStats()
	require.Equal(t, []int{1, 1}, []int{ps[0].Lent, ps[1].Borrowed}, "%+v", ps)
	// (A reservation may follow now, for the announcement kept: the pools
	// are full and it finds nothing.)
	require.Zero(t, rt.Stats().Preempted)
	require.Empty(t, canceled)
}
