package runtime_test

import (
	"context"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// The rows of "canceled means never run again" (issue 29), each on a
// redis-server of its own with worker processes (cancel_proc_test.go).

// raceRounds is how often each race row runs.
const raceRounds = 50

// A worker SIGKILLed between the cancel and its handler's return: lease
// recovery ends the task canceled (not pending), it never runs again, and
// its uniqueness lock is released.
func TestCancelWorkerKilled(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	f := newCancelFixture(t, srv.Addr(), srv.NewClient(t), time.Second)
	holder := f.worker(t, "holder", 300*time.Millisecond)
	id := f.enqueue(t, "stubborn", "", 1, queue.Unique(time.Hour))
	f.awaitStart(t, id)
	canceled, err := f.cancel(t, id)
	require.NoError(t, err)
	require.Equal(t, handlers.ErrCanceled.Error(), f.cause(t, id))
	kill9(t, holder) // the handler ignored the cancel: it never returned
	f.worker(t, "other", 300*time.Millisecond)
	got := requireState(t, f.q, id, queue.StateCanceled)
	require.Equal(t, 1, got.Recoveries)
	require.Empty(t, got.Checkpoint)
	// The other worker runs a task enqueued after: by then it had its
	// chance at the canceled one.
	next := f.enqueue(t, "stubborn", "", 1, queue.Unique(time.Hour)) // the lock went with the cancel
	f.awaitStart(t, next)
	require.Equal(t, 1, f.runs(t, id))
	require.Zero(t, f.runsAfter(t, id, canceled), "a canceled task never runs again")
	requireCanceledCount(t, f.q, 1, 1)
}

// A cancel racing a preemption of the same task: however they interleave
// (the requeue first, the cancel first, or the cancel's cause first), the
// task ends canceled and never runs again, and the urgent task runs.
func TestCancelRacesPreemption(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	f := newCancelFixture(t, srv.Addr(), srv.NewClient(t), 5*time.Second)
	f.worker(t, "w", time.Second)
	for i := range raceRounds {
		low := f.enqueue(t, "block", "", 0)
		f.awaitStart(t, low)
		var wg sync.WaitGroup
		var urgent string
		wg.Add(2)
		go func() { defer wg.Done(); urgent = f.enqueue(t, "quick", "", 2) }()
		var canceled time.Time
		go func() {
			defer wg.Done()
			var err error
			canceled, err = f.cancel(t, low)
			require.NoError(t, err)
		}()
		wg.Wait()
		got := requireState(t, f.q, low, queue.StateCanceled)
		requireState(t, f.q, urgent, queue.StateDone)
		// (It may run again between the preemption and the cancel.)
		require.Zero(t, f.runsAfter(t, low, canceled), "round %d: a canceled task never runs again", i)
		require.Zero(t, got.Attempt, "round %d", i)
	}
	requireCanceledCount(t, f.q, 0, raceRounds)
}

// A cancel racing the task's own success: one of the two wins, Inspect
// says which, the handler saw the cancel if the cancel won, and the task
// never runs again.
func TestCancelRacesSuccess(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	f := newCancelFixture(t, srv.Addr(), srv.NewClient(t), 5*time.Second)
	f.worker(t, "w", time.Second)
	won := map[queue.State]int{}
	for i := range raceRounds {
		id := f.enqueue(t, "race", strconv.Itoa(i%10*300), 1) // succeeds 0 to 2.7 ms in
		f.awaitStart(t, id)
		_, err := f.cancel(t, id)
		if err != nil {
			require.ErrorIs(t, err, queue.ErrTaskFinished, "round %d: the success landed first", i)
		}
		cause := f.cause(t, id)
		var got *queue.TaskInfo
		require.Eventually(t, func() bool {
			var err error
			got, err = f.q.Inspect(context.Background(), id)
			require.NoError(t, err)
			return got.State == queue.StateDone || got.State == queue.StateCanceled
		}, longWait, time.Millisecond)
		won[got.State]++
		if err != nil {
			require.Equal(t, queue.StateDone, got.State, "round %d: refused as finished", i)
		}
		if got.State == queue.StateCanceled {
			require.Equal(t, handlers.ErrCanceled.Error(), cause, "round %d: canceled, so the handler saw it", i)
		} else {
			require.Empty(t, cause, "round %d: done, so the handler succeeded", i)
		}
		require.Equal(t, 1, f.runs(t, id), "round %d: it never runs again", i)
	}
	t.Logf("of %d races, %d done, %d canceled", raceRounds, won[queue.StateDone], won[queue.StateCanceled])
	requireCanceledCount(t, f.q, 1, int64(won[queue.StateCanceled]))
}

// Redis restarted between the cancel and the holder noticing it (its
// Pub/Sub connection killed, the process stopped meanwhile): the request
// survived in the append-only file, and the holder's next heartbeat
// cancels the run.
func TestCancelAcrossRedisRestart(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{Persistent: true})
	f := newCancelFixture(t, srv.Addr(), srv.NewClient(t), 10*time.Second)
	holder := f.worker(t, "holder", 500*time.Millisecond)
	id := f.enqueue(t, "block", "", 1)
	f.awaitStart(t, id)
	require.NoError(t, holder.Process.Signal(syscall.SIGSTOP))
	require.NoError(t, f.rdb.Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub").Err())
	require.NoError(t, f.q.Cancel(context.Background(), id))
	require.NoError(t, srv.Stop())
	require.NoError(t, srv.Restart())
	require.NoError(t, holder.Process.Signal(syscall.SIGCONT))
	require.Equal(t, handlers.ErrCanceled.Error(), f.cause(t, id))
	requireState(t, f.q, id, queue.StateCanceled)
	require.Equal(t, 1, f.runs(t, id))
}

// With the holder's Pub/Sub connection down when the cancel is sent (the
// process stopped while it is killed, so the subscription cannot come
// back first), the heartbeat cancels the run within one interval.
func TestCancelWithoutPubSub(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	f := newCancelFixture(t, srv.Addr(), srv.NewClient(t), 10*time.Second)
	const beat = time.Second
	holder := f.worker(t, "holder", beat)
	for i := range 3 {
		id := f.enqueue(t, "block", "", 1)
		f.awaitStart(t, id)
		require.NoError(t, holder.Process.Signal(syscall.SIGSTOP))
		require.NoError(t, f.rdb.Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub").Err())
		require.NoError(t, f.q.Cancel(context.Background(), id))
		sent := time.Now()
		require.NoError(t, holder.Process.Signal(syscall.SIGCONT))
		require.Equal(t, handlers.ErrCanceled.Error(), f.cause(t, id))
		took := time.Since(sent)
		t.Logf("round %d: the heartbeat cancelled the run %v after the cancel", i, took)
		require.Less(t, took, beat+beat/2, "round %d: not within a heartbeat interval (%v)", i, beat)
		requireState(t, f.q, id, queue.StateCanceled)
	}
}

// requireCanceledCount asserts Stats' Canceled at level.
func requireCanceledCount(t *testing.T, q *queue.Client, level int, want int64) {
	t.Helper()
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, want, st.Levels[level].Canceled)
}
