package runtime_test

import (
	"context"
	"testing"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Victim choice: the lowest level first; among equal levels the task that
// loses the least work, i.e. the one with the most recent checkpoint.

// victimJobs runs "job" tasks that report their start, save a checkpoint
// when the test says so, and otherwise wait for cancellation (reporting
// its cause) or for the test's release.
type victimJobs struct {
	started   chan string                   // task ID, on every start
	cancelled chan string                   // task ID, when cancelled by preemption
	urgent    chan string                   // urgent task ID, on start
	saveReq   map[string]chan chan struct{} // per ID: ask for a save, get an ack
	release   chan struct{}
	doRelease func()
	runs      *runTally
}

func newVictimJobs(ids ...string) *victimJobs {
	r := &victimJobs{
		started: make(chan string, 16), cancelled: make(chan string, 16), urgent: make(chan string, 4),
		saveReq: map[string]chan chan struct{}{}, runs: newRunTally(),
	}
	r.release, r.doRelease = closeOnce()
	for _, id := range ids {
		r.saveReq[id] = make(chan chan struct{})
	}
	return r
}

func (r *victimJobs) mux(t *testing.T) handlers.Handler {
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(ctx context.Context, tk *queue.TaskInfo) error {
		leave := r.runs.enter(tk)
		r.started <- tk.ID
		if tk.Preemptions > 0 { // resumed after its preemption: finish
			leave(true)
			return nil
		}
		for {
			select {
			case ack := <-r.saveReq[tk.ID]:
				assert.NoError(t, checkpoint.Save(ctx, []byte("saved")))
				close(ack)
			case <-r.release:
				leave(true)
				return nil
			case <-ctx.Done():
				if wasPreempted(ctx) {
					r.cancelled <- tk.ID
				}
				leave(false)
				return ctx.Err()
			}
		}
	})
	mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
		r.urgent <- tk.ID
		return nil
	})
	return mux
}

// save makes task id save a checkpoint now and waits until it did.
func (r *victimJobs) save(t *testing.T, id string) {
	t.Helper()
	ack := make(chan struct{})
	r.saveReq[id] <- ack
	receive(t, ack, "checkpoint of "+id)
}

// The lowest level gives way even when it would lose the most work: the
// level-0 task started first and never checkpointed, the level-1 task
// started later and just checkpointed.
func TestVictimIsLowestLevel(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		jobs := newVictimJobs("low", "mid")
		rt := startRuntime(t, q, jobs.mux(t), runtime.Config{Concurrency: 2, PollInterval: fastPoll})
		t.Cleanup(jobs.doRelease)

		enqueue(t, q, "job", "", 0, queue.ID("low"))
		require.Equal(t, "low", receive(t, jobs.started, "low start"))
		enqueue(t, q, "job", "", 1, queue.ID("mid"))
		require.Equal(t, "mid", receive(t, jobs.started, "mid start"))
		jobs.save(t, "mid")

		u := enqueue(t, q, "urgent", "", 2)
		require.Equal(t, u, receive(t, jobs.urgent, "urgent start"))
		require.Equal(t, "low", receive(t, jobs.cancelled, "victim"))
		require.Equal(t, "low", receive(t, jobs.started, "victim resumes"))
		require.Empty(t, jobs.cancelled, "a second task was preempted")
		jobs.doRelease()
		requireDeleted(t, q, "low")
		requireDeleted(t, q, "mid")
		require.Equal(t, 1, jobs.runs.maxConcurrent())
		st := rt.Stats()
		require.EqualValues(t, 1, st.Preempted)
		require.EqualValues(t, 1, st.Reserved)
		requireInvariant4(t, rt)
	})
}

// Among tasks of the lowest level, the one whose last checkpoint is the
// most recent gives way: it loses the least work. "older" started later
// (so it would lose less if checkpoints were ignored) but saved first.
func TestVictimHasMostRecentCheckpoint(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		jobs := newVictimJobs("fresh", "older")
		rt := startRuntime(t, q, jobs.mux(t), runtime.Config{Concurrency: 2, PollInterval: fastPoll})
		t.Cleanup(jobs.doRelease)

		enqueue(t, q, "job", "", 0, queue.ID("fresh"))
		require.Equal(t, "fresh", receive(t, jobs.started, "fresh start"))
		enqueue(t, q, "job", "", 0, queue.ID("older"))
		require.Equal(t, "older", receive(t, jobs.started, "older start"))
		jobs.save(t, "older")
		jobs.save(t, "fresh")

		u := enqueue(t, q, "urgent", "", 1)
		require.Equal(t, u, receive(t, jobs.urgent, "urgent start"))
		require.Equal(t, "fresh", receive(t, jobs.cancelled, "victim"))
		require.Equal(t, "fresh", receive(t, jobs.started, "victim resumes"))
		require.Empty(t, jobs.cancelled, "a second task was preempted")
		jobs.doRelease()
		requireDeleted(t, q, "fresh")
		requireDeleted(t, q, "older")
		st := rt.Stats()
		require.EqualValues(t, 1, st.Preempted)
		require.EqualValues(t, 1, st.Reserved)
		requireInvariant4(t, rt)
	})
}
