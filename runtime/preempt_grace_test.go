package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/require"
)

// A victim that ignores its cancellation past the grace period is counted
// as stuck, keeps its slot and its lease (so no worker of the fleet runs it
// a second time meanwhile), and when it finally returns its task is
// requeued and then completes exactly once.
func TestStuckVictimKeepsSlotAndLease(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		// A short lease: were the stuck victim's lease not extended, it
		// would expire within the test's quiet windows and be recovered.
		qcfg := queue.Config{LeaseDuration: time.Second}
		qa := workerClient(t, b, qcfg)
		runs := newRunTally()
		victimStarts := make(chan int, 4) // Preemptions seen at start
		victimCancelled := make(chan struct{}, 1)
		fillerStarted := make(chan struct{}, 1)
		urgentStarted := make(chan struct{}, 1)
		otherStarted := make(chan string, 1)
		unstick, doUnstick := closeOnce()
		fillerDone, doFiller := closeOnce()
		urgentDone, doUrgent := closeOnce()
		mux := handlers.NewMux()
		mux.HandleFunc("victim", func(ctx context.Context, tk *queue.TaskInfo) error {
			leave := runs.enter(tk)
			victimStarts <- tk.Preemptions
			if tk.Preemptions > 0 {
				leave(true)
				return nil
			}
			<-ctx.Done()
			victimCancelled <- struct{}{}
			<-unstick // ignores the cancellation well past its grace
			leave(false)
			return ctx.Err()
		})
		mux.HandleFunc("filler", func(ctx context.Context, tk *queue.TaskInfo) error {
			fillerStarted <- struct{}{}
			<-fillerDone
			return nil
		})
		mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
			urgentStarted <- struct{}{}
			<-urgentDone
			return nil
		})
		mux.HandleFunc("other", func(ctx context.Context, tk *queue.TaskInfo) error {
			otherStarted <- tk.ID
			return nil
		})
		grace := 200 * time.Millisecond
		rtA := startRuntime(t, qa, mux, runtime.Config{WorkerID: "A", Concurrency: 2, PollInterval: fastPoll, GracePeriod: grace})
		t.Cleanup(func() { doUnstick(); doFiller(); doUrgent() })

		// Two slots: an opted-out filler and the victim.
		fillerID := enqueue(t, qa, "filler", "", 0, queue.Preemptible(false))
		receive(t, fillerStarted, "filler start")
		victimID := enqueue(t, qa, "victim", "", 0)
		require.Equal(t, 0, receive(t, victimStarts, "victim start"))
		urgentID := enqueue(t, qa, "urgent", "", 2)
		receive(t, urgentStarted, "urgent start")
		receive(t, victimCancelled, "victim cancelled")
		require.Eventually(t, func() bool { return rtA.Stats().Stuck == 1 }, longWait, 10*time.Millisecond,
			"stuck victim counted")

		// The stuck victim took its slot back: with the filler gone, the
		// urgent task and the victim fill both slots, for longer than a
		// lease lasts, and another task waits.
		doFiller()
		requireDeleted(t, qa, fillerID)
		otherID := enqueue(t, qa, "other", "", 0)
		require.Never(t, func() bool { return len(otherStarted) > 0 }, 1500*time.Millisecond, 10*time.Millisecond,
			"a task started in the stuck victim's slot")
		rec, err := store.Of(qa).Inspect(context.Background(), victimID)
		require.NoError(t, err)
		require.Equal(t, store.StateActive, rec.State)
		require.Equal(t, "A", rec.Worker)
		require.True(t, rec.LeaseDeadline.After(time.Now()), "stuck victim's lease was not extended: %v", rec.LeaseDeadline)

		// The urgent task's slot frees; the victim keeps its own.
		doUrgent()
		require.Equal(t, otherID, receive(t, otherStarted, "other task in the urgent task's slot"))
		requireDeleted(t, qa, urgentID)

		// A second worker with a free slot joins: were the stuck victim's
		// lease not extended, it would recover the task and run it a
		// second time at once.
		rtB := startRuntime(t, workerClient(t, b, qcfg), mux, runtime.Config{WorkerID: "B", Concurrency: 1,
			PollInterval: fastPoll, GracePeriod: grace})
		require.Never(t, func() bool { return runs.maxConcurrent() > 1 || len(victimStarts) > 0 },
			1500*time.Millisecond, 10*time.Millisecond, "stuck victim ran a second time")

		doUnstick()
		require.Equal(t, 1, receive(t, victimStarts, "victim resumes after it returned"), "preemptions on resume")
		requireDeleted(t, qa, victimID)
		requireDeleted(t, qa, otherID)
		require.Equal(t, 1, runs.maxConcurrent())
		require.Equal(t, 1, runs.completions(victimID))
		stA, stB := rtA.Stats(), rtB.Stats()
		require.EqualValues(t, 1, stA.Stuck)
		require.EqualValues(t, 1, stA.Preempted)
		require.EqualValues(t, 1, stA.Reserved)
		require.Zero(t, stB.Preempted)
		requireInvariant4(t, rtA, rtB)
	})
}

// A stuck victim that finally finishes its work (returns nil) is acked and
// never runs again.
func TestStuckVictimThatFinishesIsAcked(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		runs := newRunTally()
		victimStarted := make(chan struct{}, 2)
		urgentDone := make(chan struct{}, 1)
		unstick, doUnstick := closeOnce()
		mux := handlers.NewMux()
		mux.HandleFunc("victim", func(ctx context.Context, tk *queue.TaskInfo) error {
			leave := runs.enter(tk)
			victimStarted <- struct{}{}
			<-ctx.Done()
			<-unstick
			leave(true)
			return nil // finished its work after all
		})
		mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
			urgentDone <- struct{}{}
			return nil
		})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, PollInterval: fastPoll, GracePeriod: 200 * time.Millisecond})
		t.Cleanup(doUnstick)

		victimID := enqueue(t, q, "victim", "", 0)
		receive(t, victimStarted, "victim start")
		enqueue(t, q, "urgent", "", 2)
		receive(t, urgentDone, "urgent run")
		require.Eventually(t, func() bool { return rt.Stats().Stuck == 1 }, longWait, 10*time.Millisecond)
		doUnstick()
		requireDeleted(t, q, victimID)
		require.Empty(t, victimStarted, "victim ran again after it finished")
		require.Equal(t, 1, runs.completions(victimID))
		st := rt.Stats()
		require.EqualValues(t, 1, st.Preempted)
		require.EqualValues(t, 1, st.Stuck)
		requireInvariant4(t, rt)
	})
}
