package runtime_test

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Invariant 5: within one level order is FIFO, except that preempted and
// recovered tasks resume first.

// With one slot, L1 runs and is preempted by U; after U, L1 resumes before
// L2 and L3, which keep their FIFO order. slowCleanup makes L1's cleanup
// outlast U, so U's end frees the slot while L1 has not been requeued yet.
func requirePreemptedResumesFirst(t *testing.T, b testredis.Backend, mode runtime.UrgentStart, slowCleanup bool) {
	q := setup(t, b, queue.Config{})
	log := &eventLog{}
	allDone := make(chan struct{}, 8)
	l1Started := make(chan struct{}, 1)
	urgentDone, markUrgentDone := closeOnce()
	mux := handlers.NewMux()
	mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
		name := string(tk.Payload)
		log.add("start %s", name)
		if name == "L1" && tk.Preemptions == 0 {
			l1Started <- struct{}{}
			<-ctx.Done()
			assert.NoError(t, checkpoint.Save(ctx, "half"))
			if slowCleanup {
				// Still winding down after U ended (with StartImmediately
				// U runs meanwhile; with StartAfterVictim it cannot).
				select {
				case <-urgentDone:
				case <-time.After(300 * time.Millisecond):
				}
				<-time.After(300 * time.Millisecond)
			}
			return ctx.Err()
		}
		if name == "L1" {
			v, ok, err := checkpoint.Load[string](ctx)
			assert.NoError(t, err)
			assert.True(t, ok && v == "half", "L1 resumes from its checkpoint, got %q", v)
		}
		allDone <- struct{}{}
		return nil
	})
	mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
		log.add("start U")
		markUrgentDone()
		allDone <- struct{}{}
		return nil
	})
	// L1..L3 wait in their level before the worker starts, so it leases L1.
	for _, n := range []string{"L1", "L2", "L3"} {
		enqueue(t, q, "low", n, 0)
	}
	rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, PollInterval: fastPoll, UrgentStart: mode})
	receive(t, l1Started, "L1 start")
	enqueue(t, q, "urgent", "", 2)
	for range 4 {
		receive(t, allDone, "all tasks done")
	}
	require.Equal(t, []string{"start L1", "start U", "start L1", "start L2", "start L3"}, log.list())
	st := rt.Stats()
	require.EqualValues(t, 1, st.Preempted)
	require.EqualValues(t, 1, st.Reserved)
	requireInvariant4(t, rt)
}

func TestPreemptedTaskResumesFirst(t *testing.T) {
	skipOnShards(t, "FIFO within a level holds per shard, not across shards")
	for _, tc := range []struct {
		name        string
		mode        runtime.UrgentStart
		slowCleanup bool
	}{
		{"immediately", runtime.StartImmediately, false},
		{"after_victim", runtime.StartAfterVictim, false},
		{"immediately_slow_cleanup", runtime.StartImmediately, true},
		{"after_victim_slow_cleanup", runtime.StartAfterVictim, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
				requirePreemptedResumesFirst(t, b, tc.mode, tc.slowCleanup)
			})
		})
	}
}

// A task recovered from a crashed worker goes to the head of its level:
// it runs before tasks of its level that were enqueued after it was first
// leased, and resumes from the checkpoint the crashed worker saved.
func TestRecoveredTaskResumesFirst(t *testing.T) {
	skipOnShards(t, "FIFO within a level holds per shard, not across shards")
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{LeaseDuration: time.Second})
		ctx := context.Background()
		log := &eventLog{}
		allDone := make(chan struct{}, 8)
		blockerStarted := make(chan struct{}, 1)
		release, doRelease := closeOnce()
		mux := handlers.NewMux()
		mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
			name := string(tk.Payload)
			log.add("start %s", name)
			switch name {
			case "blocker":
				blockerStarted <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			case "crashed":
				v, ok, err := checkpoint.Load[string](ctx)
				assert.NoError(t, err)
				assert.True(t, ok && v == "at-42", "resumes from the crashed worker's checkpoint, got %q", v)
				assert.Equal(t, 1, tk.Recoveries)
			}
			allDone <- struct{}{}
			return nil
		})

		// A worker leases "crashed", saves a checkpoint and dies.
		crashedID := enqueue(t, q, "low", "crashed", 0)
		res, err := store.Of(q).Lease(ctx, store.LeaseRequest{Worker: "crashed-worker"})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		_, err = store.Of(q).SaveCheckpoint(ctx, crashedID, res.Tasks[0].Token, []byte(`"at-42"`))
		require.NoError(t, err)

		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, PollInterval: fastPoll})
		t.Cleanup(doRelease)
		enqueue(t, q, "low", "blocker", 0)
		receive(t, blockerStarted, "blocker start")
		enqueue(t, q, "low", "L2", 0)
		enqueue(t, q, "low", "L3", 0)
		// The saturated worker's polls recover the expired lease.
		require.Eventually(t, func() bool {
			ids, err := store.Of(q).Pending(ctx, 0)
			return err == nil && len(ids) == 3 && ids[0] == crashedID
		}, longWait, 20*time.Millisecond, "crashed task recovered to the head of its level")
		doRelease()
		for range 4 {
			receive(t, allDone, "all tasks done")
		}
		require.Equal(t, []string{"start blocker", "start crashed", "start L2", "start L3"}, log.list())
		requireDeleted(t, q, crashedID)
		require.Zero(t, rt.Stats().Preempted)
	})
}
