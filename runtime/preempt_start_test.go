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

// urgentStartRig has a one-slot runtime whose victim, once preempted, blocks
// in its cleanup until the test closes release.
type urgentStartRig struct {
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

func newUrgentStartRig(t *testing.T, b testredis.Backend, mode runtime.UrgentStart) *urgentStartRig {
	t.Helper()
	rig := &urgentStartRig{q: setup(t, b, queue.Config{}), log: &eventLog{}, victimResumed: make(chan struct{}, 1)}
	var blocked, urgent func()
	var release chan struct{}
	rig.victimBlocked, blocked = closeOnce()
	rig.urgentStarted, urgent = closeOnce()
	release, rig.doRelease = closeOnce()
	victimStarted := make(chan struct{}, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("victim", func(ctx context.Context, tk *queue.TaskInfo) error {
		if tk.Preemptions > 0 {
			rig.log.add("victim-resume")
			rig.victimResumed <- struct{}{}
			return nil
		}
		victimStarted <- struct{}{}
		<-ctx.Done()
		rig.log.add("victim-cancelled")
		blocked()
		<-release // cleanup the test controls
		rig.log.add("victim-return")
		return ctx.Err()
	})
	mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
		rig.log.add("urgent-start")
		urgent()
		return nil
	})
	// A long grace period: the victim's cleanup must not run into it.
	rig.rt = startRuntime(t, rig.q, mux, runtime.Config{Concurrency: 1, PollInterval: fastPoll,
		UrgentStart: mode, GracePeriod: 30 * time.Second})
	t.Cleanup(rig.doRelease)
	rig.victimID = enqueue(t, rig.q, "victim", "", 0)
	receive(t, victimStarted, "victim start")
	rig.urgentID = enqueue(t, rig.q, "urgent", "", 2)
	receive(t, rig.victimBlocked, "victim cancelled")
	return rig
}

func (rig *urgentStartRig) finish(t *testing.T) {
	t.Helper()
	receive(t, rig.victimResumed, "victim resumes")
	requireDeleted(t, rig.q, rig.victimID)
	requireDeleted(t, rig.q, rig.urgentID)
	st := rig.rt.Stats()
	require.EqualValues(t, 1, st.Preempted)
	require.EqualValues(t, 1, st.Reserved)
	require.Zero(t, st.Stuck)
	requireInvariant4(t, rig.rt)
}

// StartAfterVictim: the urgent handler starts only once the victim's
// handler returned.
func TestUrgentStartsAfterVictim(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		rig := newUrgentStartRig(t, b, runtime.StartAfterVictim)
		require.Never(t, func() bool { return isClosed(rig.urgentStarted) },
			quietSpell, 10*time.Millisecond, "urgent task started while its victim was still running")
		rig.doRelease()
		receive(t, rig.urgentStarted, "urgent start")
		rig.finish(t)
		require.Equal(t, []string{"victim-cancelled", "victim-return", "urgent-start", "victim-resume"}, rig.log.list())
	})
}

// StartImmediately: the urgent handler starts while the victim is still
// blocked in its cleanup.
func TestUrgentStartsImmediately(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		rig := newUrgentStartRig(t, b, runtime.StartImmediately)
		receive(t, rig.urgentStarted, "urgent start while the victim is blocked")
		require.Equal(t, -1, rig.log.index("victim-return"))
		rig.doRelease()
		rig.finish(t)
		ev := rig.log.list()
		require.Less(t, rig.log.index("urgent-start"), rig.log.index("victim-return"), "events %v", ev)
		require.Equal(t, "victim-resume", ev[len(ev)-1], "events %v", ev)
	})
}
