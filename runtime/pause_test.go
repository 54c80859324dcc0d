package runtime_test

import (
	"github.com/overtake/overtake/internal/ckpt"

	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// pauseWorker runs "job" tasks: each reports its start (with the
// checkpoint it resumed from, "" if none) and, unless told to finish
// (payload "quick"), blocks until cancelled, then saves "saved" and
// returns the cause.
type pauseWorker struct {
	started chan [2]string // task ID, checkpoint
	ended   chan error
}

func newPauseWorker() *pauseWorker {
	return &pauseWorker{started: make(chan [2]string, 16), ended: make(chan error, 16)}
}

func (p *pauseWorker) mux() *handlers.Mux {
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(ctx context.Context, tk *queue.TaskInfo) error {
		cp, _ := ckpt.FromContext(ctx)
		p.started <- [2]string{tk.ID, string(cp.Bytes())}
		if string(tk.Payload) == "quick" {
			return nil
		}
		<-ctx.Done()
		err := context.Cause(ctx)
		if errors.Is(err, handlers.ErrPreempted) {
			if serr := cp.Save(context.WithoutCancel(ctx), []byte("saved")); serr != nil {
				err = serr
			}
		}
		p.ended <- err
		return err
	})
	return mux
}

// With the default intervals (no fast poll), a pause reaches an idle
// worker through the wake channel before the task enqueued after it, a
// paused level's tasks stay pending while others run, and Resume wakes the
// worker at once.
func TestPauseTakesEffectWithinAWakeUp(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		ctx := context.Background()
		w := newPauseWorker()
		startRuntime(t, q, w.mux(), runtime.Config{Concurrency: 2})
		first := enqueue(t, q, "job", "quick", 1) // the dispatcher has run once
		require.Equal(t, first, receive(t, w.started, "a first task")[0])

		require.NoError(t, q.Pause(ctx, 0, queue.PauseWait))
		paused := enqueue(t, q, "job", "quick", 0)
		other := enqueue(t, q, "job", "quick", 1)
		require.Equal(t, other, receive(t, w.started, "the level-1 task")[0])
		select {
		case s := <-w.started:
			t.Fatalf("task %s of the paused level ran", s[0])
		case <-time.After(300 * time.Millisecond):
		}
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, st.Levels[0].Pending)
		require.Equal(t, queue.PauseWait, st.Levels[0].Paused)

		require.NoError(t, q.Resume(ctx, 0))
		select {
		case s := <-w.started:
			require.Equal(t, paused, s[0])
		case <-time.After(3 * time.Second): // the slow poll is 10 s
			t.Fatal("the resumed level's task did not start within a wake-up")
		}
	})
}

// PausePreempt preempts the level's running task: it saves its checkpoint,
// goes back to its level, waits there while paused and resumes from the
// checkpoint after Resume. Urgent work at a paused level preempts nothing.
func TestPausePreemptsRunningTasks(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		ctx := context.Background()
		w := newPauseWorker()
		rt := startRuntime(t, q, w.mux(), runtime.Config{Concurrency: 1, PollInterval: 20 * time.Millisecond})

		low := enqueue(t, q, "job", "", 0)
		require.Equal(t, [2]string{low, ""}, receive(t, w.started, "the level-0 task"))

		// Urgent work at a paused level does not preempt.
		require.NoError(t, q.Pause(ctx, 2, queue.PauseWait))
		enqueue(t, q, "job", "quick", 2)
		select {
		case err := <-w.ended:
			t.Fatalf("the running task ended (%v) for work at a paused level", err)
		case <-time.After(300 * time.Millisecond):
		}
		require.Zero(t, rt.Stats().Preempted)

		require.NoError(t, q.Pause(ctx, 0, queue.PausePreempt))
		require.ErrorIs(t, receive(t, w.ended, "the preempted task's end"), handlers.ErrPreempted)
		// A pause with PausePreempt counts as a preemption of the task
		// (toward MaxPreemptions); a shutdown does not
		// (TestShutdownRequeuesRunningTasksAtHead).
		require.Eventually(t, func() bool {
			tk, err := q.Inspect(ctx, low)
			return err == nil && tk.State == queue.StatePending && tk.CheckpointSeq == 1 && tk.Preemptions == 1
		}, 5*time.Second, 10*time.Millisecond, "requeued with its checkpoint, one preemption counted")
		select {
		case s := <-w.started:
			t.Fatalf("task %s started while every level it could run at is paused", s[0])
		case <-time.After(300 * time.Millisecond):
		}
		require.EqualValues(t, 1, rt.Stats().Preempted)

		require.NoError(t, q.Resume(ctx, queue.AllLevels))
		got := []([2]string){receive(t, w.started, "a resumed task"), receive(t, w.started, "a resumed task")}
		require.Contains(t, got, [2]string{low, "saved"}, "it resumes from its checkpoint")
	})
}

// Workers add their outcomes to the fleet's rates in their heartbeats (and
// at shutdown), readable by any client through Stats.
func TestRatesReportedByWorkers(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		var offset atomic.Int64 // the queue's clock runs ahead by this
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		q := setup(t, b, queue.Config{Clock: clock})
		ctx := context.Background()
		mux := handlers.NewMux()
		mux.HandleFunc("ok", func(context.Context, *queue.TaskInfo) error { return nil })
		mux.HandleFunc("bad", func(context.Context, *queue.TaskInfo) error { return errors.New("no") })
		rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 2})
		require.NoError(t, err)
		require.NoError(t, rt.Start(ctx))
		for range 6 {
			enqueue(t, q, "ok", "", 1)
		}
		enqueue(t, q, "bad", "", 0, queue.MaxRetries(0))
		require.Eventually(t, func() bool { return rt.Stats().Processed == 7 }, 10*time.Second, 5*time.Millisecond)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(sctx)) // reports what no heartbeat did yet

		offset.Store(int64(20 * time.Second)) // the buckets written are complete
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		window := queue.RateWindow.Seconds()
		require.Equal(t, queue.Rates{Processed: 6 / window}, st.Levels[1].Rates)
		require.Equal(t, queue.Rates{Processed: 1 / window, Failed: 1 / window}, st.Levels[0].Rates) // failed runs are processed too
	})
}
