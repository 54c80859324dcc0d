package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Tests that the runtime does NOT preempt when the policy or the situation
// says it must not, and that the thrash guards hold.

// requireNoPreemption runs a "low" task at lowLevel that blocks until the test
// releases it, then enqueues an "urgent" task at urgentLevel on a one-slot
// runtime. The urgent task must not start, and the low task must not be
// cancelled, while the low one runs; once released, the urgent task runs.
func requireNoPreemption(t *testing.T, b testredis.Backend, cfg runtime.Config, lowLevel int, lowOpts []queue.Option, urgentLevel int) {
	t.Helper()
	q := setup(t, b, queue.Config{})
	lowStarted := make(chan struct{}, 4)
	lowCancelled := make(chan error, 4)
	urgentStarted := make(chan struct{}, 1)
	release, doRelease := closeOnce()
	mux := handlers.NewMux()
	mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
		lowStarted <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			lowCancelled <- context.Cause(ctx)
			return ctx.Err()
		}
	})
	mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
		urgentStarted <- struct{}{}
		return nil
	})
	cfg.Concurrency = 1
	cfg.PollInterval = fastPoll
	rt := startRuntime(t, q, mux, cfg)
	t.Cleanup(doRelease) // runs before the runtime's shutdown

	lowID := enqueue(t, q, "low", "", lowLevel, lowOpts...)
	receive(t, lowStarted, "low start")
	urgentID := enqueue(t, q, "urgent", "", urgentLevel)
	require.Never(t, func() bool { return len(urgentStarted) > 0 || len(lowCancelled) > 0 },
		quietSpell, 10*time.Millisecond, "urgent task started or low task cancelled while the low task ran")

	doRelease()
	receive(t, urgentStarted, "urgent start after the low task ended")
	requireDeleted(t, q, lowID)
	requireDeleted(t, q, urgentID)
	require.Empty(t, lowCancelled, "low task was cancelled")
	require.Empty(t, lowStarted, "low task ran twice")
	st := rt.Stats()
	require.Zero(t, st.Preempted, "preemptions")
	require.Zero(t, st.Reserved, "reservations")
	requireInvariant4(t, rt)
}

// A free slot in this runtime takes the urgent task; nothing is preempted.
func TestNoPreemptionWithFreeLocalSlot(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		lowStarted := make(chan struct{}, 1)
		lowCancelled := make(chan error, 1)
		urgentStarted := make(chan struct{}, 1)
		release, doRelease := closeOnce()
		mux := handlers.NewMux()
		mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
			lowStarted <- struct{}{}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				lowCancelled <- context.Cause(ctx)
				return ctx.Err()
			}
		})
		mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
			urgentStarted <- struct{}{}
			return nil
		})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 2, PollInterval: fastPoll})
		t.Cleanup(doRelease)

		lowID := enqueue(t, q, "low", "", 0)
		receive(t, lowStarted, "low start")
		urgentID := enqueue(t, q, "urgent", "", 2)
		receive(t, urgentStarted, "urgent start in the free slot")
		requireDeleted(t, q, urgentID)
		require.Empty(t, lowCancelled, "low task cancelled although a slot was free")
		doRelease()
		requireDeleted(t, q, lowID)
		require.Empty(t, lowCancelled)
		st := rt.Stats()
		require.Zero(t, st.Preempted)
		require.Zero(t, st.Reserved)
		require.EqualValues(t, 2, st.Processed)
	})
}

// A task never preempts one of its own level.
func TestNoPreemptionAtEqualLevel(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		requireNoPreemption(t, b, runtime.Config{}, 2, nil, 2)
	})
}

// A task enqueued with Preemptible(false) runs to its end.
func TestNoPreemptionOfOptedOutTask(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		requireNoPreemption(t, b, runtime.Config{}, 0, []queue.Option{queue.Preemptible(false)}, 2)
	})
}

// Preemption.Disabled turns preemption off.
func TestNoPreemptionWhenDisabled(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		requireNoPreemption(t, b, runtime.Config{Preemption: preempt.Policy{Disabled: true}}, 0, nil, 2)
	})
}

// An arriving level listed in NeverPreempt waits like everyone else.
func TestNoPreemptionByNeverPreemptLevel(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		requireNoPreemption(t, b, runtime.Config{Preemption: preempt.Policy{NeverPreempt: []int{2}}}, 0, nil, 2)
	})
}

// A running level listed in NeverPreempted is never preempted.
func TestNoPreemptionOfNeverPreemptedLevel(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		requireNoPreemption(t, b, runtime.Config{Preemption: preempt.Policy{NeverPreempted: []int{0}}}, 0, nil, 2)
	})
}

// With MaxPreemptions 1, a task preempted once runs to completion: a second
// urgent task waits for it.
func TestNoPreemptionPastMaxPreemptions(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		type step struct{ N int }
		lowStarts := make(chan int, 4) // Preemptions seen at each start
		lowCancelled := make(chan error, 4)
		urgentStarted := make(chan string, 2)
		release, doRelease := closeOnce()
		runs := newRunTally()
		mux := handlers.NewMux()
		mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
			leave := runs.enter(tk)
			s, _, err := checkpoint.Load[step](ctx)
			if err != nil {
				leave(false)
				return err
			}
			lowStarts <- tk.Preemptions
			if s.N == 0 {
				assert.NoError(t, checkpoint.Save(ctx, step{N: 1}))
			}
			select {
			case <-release:
				leave(true)
				return nil
			case <-ctx.Done():
				lowCancelled <- context.Cause(ctx)
				leave(false)
				return ctx.Err()
			}
		})
		mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
			urgentStarted <- tk.ID
			return nil
		})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, PollInterval: fastPoll,
			Preemption: preempt.Policy{MaxPreemptions: 1}})
		t.Cleanup(doRelease)

		lowID := enqueue(t, q, "low", "", 0)
		require.Equal(t, 0, receive(t, lowStarts, "low start"))
		u1 := enqueue(t, q, "urgent", "", 2)
		require.Equal(t, u1, receive(t, urgentStarted, "first urgent task"))
		require.ErrorIs(t, receive(t, lowCancelled, "first preemption"), handlers.ErrPreempted)
		require.Equal(t, 1, receive(t, lowStarts, "low resume"), "preemptions seen on resume")

		u2 := enqueue(t, q, "urgent", "", 2)
		require.Never(t, func() bool { return len(urgentStarted) > 0 || len(lowCancelled) > 0 },
			quietSpell, 10*time.Millisecond, "task preempted past MaxPreemptions")
		doRelease()
		require.Equal(t, u2, receive(t, urgentStarted, "second urgent task after the low one"))
		requireDeleted(t, q, lowID)
		requireDeleted(t, q, u2)
		require.Equal(t, 1, runs.completions(lowID))
		require.LessOrEqual(t, runs.maxPreemptions(), 1)
		st := rt.Stats()
		require.EqualValues(t, 1, st.Preempted)
		require.EqualValues(t, 1, st.Reserved)
		requireInvariant4(t, rt)
	})
}

// A task is not preempted before it ran MinRunTime; then it is, without
// waiting for the slow poll (a minute here): the dispatcher looks again
// when the first task becomes eligible.
func TestPreemptionWaitsForMinRunTime(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		const minRun = 1200 * time.Millisecond
		q := setup(t, b, queue.Config{})
		lowStarts := make(chan struct{}, 2)
		lowCancelled := make(chan error, 2)
		urgentAt := make(chan time.Time, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
			lowStarts <- struct{}{}
			if tk.Preemptions > 0 {
				return nil
			}
			<-ctx.Done()
			lowCancelled <- context.Cause(ctx)
			return ctx.Err()
		})
		mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
			urgentAt <- time.Now()
			return nil
		})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, PollInterval: time.Minute,
			Preemption: preempt.Policy{MinRunTime: minRun}})

		before := time.Now() // the low run starts after this
		lowID := enqueue(t, q, "low", "", 0)
		receive(t, lowStarts, "low start")
		urgentID := enqueue(t, q, "urgent", "", 2)
		at := receive(t, urgentAt, "urgent start")
		require.GreaterOrEqual(t, at.Sub(before), minRun, "urgent task preempted a task younger than MinRunTime")
		require.ErrorIs(t, receive(t, lowCancelled, "preemption"), handlers.ErrPreempted)
		receive(t, lowStarts, "low resume")
		requireDeleted(t, q, lowID)
		requireDeleted(t, q, urgentID)
		st := rt.Stats()
		require.EqualValues(t, 1, st.Preempted)
		require.EqualValues(t, 1, st.Reserved)
		requireInvariant4(t, rt)
	})
}
