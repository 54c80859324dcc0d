package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/require"
)

// When a preempting task starts: after its victim returned
// (StartAfterVictim) or at once (StartImmediately).

// blockedVictim is a scene on a one-slot runtime (built on setup's
// bundle): a victim running, an urgent task enqueued that preempts it, and
// the victim blocked in its cleanup until the test releases it
// (doRelease).
type blockedVictim struct {
	q             *queue.Client
	rt            *runtime.Runtime
	log           *eventLog
	victimBlocked chan struct{} // closed when the victim is cancelled and blocks
	urgentStarted chan struct{} // closed when the urgent task starts
	victimResumed chan struct{}
	doRelease     func()
	victimID      string
	urgentID      string
}

func startBlockedVictim(t *testing.T, b testredis.Backend, mode runtime.UrgentStart) *blockedVictim {
	t.Helper()
	sc := &blockedVictim{q: setup(t, b, queue.Config{}), log: &eventLog{}, victimResumed: make(chan struct{}, 1)}
	var blocked, urgent func()
	var release chan struct{}
	sc.victimBlocked, blocked = closeOnce()
	sc.urgentStarted, urgent = closeOnce()
	release, sc.doRelease = closeOnce()
	victimStarted := make(chan struct{}, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("victim", func(ctx context.Context, tk *queue.TaskInfo) error {
		if tk.Preemptions > 0 {
			sc.log.add("victim-resume")
			sc.victimResumed <- struct{}{}
			return nil
		}
		victimStarted <- struct{}{}
		<-ctx.Done()
		sc.log.add("victim-cancelled")
		blocked()
		<-release // cleanup the test controls
		sc.log.add("victim-return")
		return ctx.Err()
	})
	mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
		sc.log.add("urgent-start")
		urgent()
		return nil
	})
	// A long grace period: the victim's cleanup must not run into it.
	sc.rt = startRuntime(t, sc.q, mux, runtime.Config{Concurrency: 1, PollInterval: fastPoll,
		UrgentStart: mode, GracePeriod: 30 * time.Second})
	t.Cleanup(sc.doRelease)
	sc.victimID = enqueue(t, sc.q, "victim", "", 0)
	receive(t, victimStarted, "victim start")
	sc.urgentID = enqueue(t, sc.q, "urgent", "", 2)
	receive(t, sc.victimBlocked, "victim cancelled")
	return sc
}

func (sc *blockedVictim) finish(t *testing.T) {
	t.Helper()
	receive(t, sc.victimResumed, "victim resumes")
	requireDeleted(t, sc.q, sc.victimID)
	requireDeleted(t, sc.q, sc.urgentID)
	st := sc.rt.Stats()
	require.EqualValues(t, 1, st.Preempted)
	require.EqualValues(t, 1, st.Reserved)
	require.Zero(t, st.Stuck)
	requireInvariant4(t, sc.rt)
}

// StartAfterVictim: the urgent handler starts only once the victim's
// handler returned.
func TestUrgentStartsAfterVictim(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		sc := startBlockedVictim(t, b, runtime.StartAfterVictim)
		require.Never(t, func() bool { return isClosed(sc.urgentStarted) },
			quietSpell, 10*time.Millisecond, "urgent task started while its victim was still running")
		sc.doRelease()
		receive(t, sc.urgentStarted, "urgent start")
		sc.finish(t)
		require.Equal(t, []string{"victim-cancelled", "victim-return", "urgent-start", "victim-resume"}, sc.log.list())
	})
}

// StartImmediately: the urgent handler starts while the victim is still
// blocked in its cleanup.
func TestUrgentStartsImmediately(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		sc := startBlockedVictim(t, b, runtime.StartImmediately)
		receive(t, sc.urgentStarted, "urgent start while the victim is blocked")
		require.Equal(t, -1, sc.log.index("victim-return"))
		sc.doRelease()
		sc.finish(t)
		ev := sc.log.list()
		require.Less(t, sc.log.index("urgent-start"), sc.log.index("victim-return"), "events %v", ev)
		require.Equal(t, "victim-resume", ev[len(ev)-1], "events %v", ev)
	})
}
