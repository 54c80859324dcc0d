package runtime_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Three worker processes share a schedule of a tick a second; one is
// killed with SIGKILL mid-run and restarted. Every tick from the first to
// the last is enqueued exactly once: none twice, none lost while a worker
// runs. The ticks keep their level, and stay pending (the queue is paused)
// so that they can be counted.
func TestPeriodicOnceAcrossWorkers(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		ctx := context.Background()
		require.NoError(t, q.Pause(ctx, queue.AllLevels, queue.PauseWait))
		spec := envWorkerPeriodic + "=@every 1s"
		procs := make([]*exec.Cmd, 3)
		for i, id := range []string{"p0", "p1", "p2"} {
			procs[i] = startWorkerProcess(t, b.Addr, b.Prefix, id, 1, spec)
		}
		ticks := func() []string {
			ids, _, err := q.PendingPage(ctx, 1, 0, 1000)
			require.NoError(t, err)
			return ids
		}
		waitTicks := func(n int, what string) {
			require.Eventually(t, func() bool { return len(ticks()) >= n }, 60*time.Second, 20*time.Millisecond, what)
		}
		waitTicks(3, "the workers enqueue ticks")
		kill9(t, procs[0])
		n := len(ticks())
		waitTicks(n+3, "the living workers go on")
		procs[0] = startWorkerProcess(t, b.Addr, b.Prefix, "p0", 1, spec)
		n = len(ticks())
		waitTicks(n+3, "with the restarted one")
		for _, p := range procs {
			kill9(t, p)
		}

		ids := ticks()
		var prev time.Time
		for i, id := range ids {
			at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(id, "tick@"))
			require.NoError(t, err, "task %q", id)
			if i > 0 {
				require.Equal(t, time.Second, at.Sub(prev), "ticks %s and %s: one a second, each once", ids[i-1], id)
			}
			prev = at
		}
		last, err := b.Client.Get(ctx, "{"+b.Prefix+":default}:periodic:tick").Int64()
		require.NoError(t, err)
		require.Equal(t, prev.UnixMilli(), last, "the schedule's last tick")
		info, err := q.Inspect(ctx, ids[0])
		require.NoError(t, err)
		require.Equal(t, "tick", info.Type)
		require.Equal(t, 1, info.Level)
	})
}

// A runtime enqueues its schedules' ticks, and a handler runs them; a
// Periodic that cannot be used is refused by New.
func TestPeriodicRuns(t *testing.T) {
	b := testredis.Mini(t)
	q := setup(t, b, queue.Config{})
	ran := make(chan *queue.TaskInfo, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("report", func(_ context.Context, tk *queue.TaskInfo) error {
		select {
		case ran <- tk:
		default:
		}
		return nil
	})
	task := queue.NewTask("report", []byte("p"), queue.LevelNamed("high"), queue.MaxRetries(2))
	startRuntime(t, q, mux, runtime.Config{Periodic: []runtime.Periodic{{Name: "r", Spec: "* * * * * *", Task: task}}})
	tk := waitFor(t, ran, "a periodic run")
	require.True(t, strings.HasPrefix(tk.ID, "r@"), tk.ID)
	require.Equal(t, 2, tk.Level)
	require.Equal(t, 2, tk.MaxRetries)
	require.Equal(t, []byte("p"), tk.Payload)

	for _, ps := range [][]runtime.Periodic{
		{{Spec: "@every 1s", Task: task}},
		{{Name: "a", Spec: "@every 1s", Task: task}, {Name: "a", Spec: "@daily", Task: task}},
		{{Name: "a", Spec: "@every 1s"}},
		{{Name: "a", Spec: "61 * * * *", Task: task}},
		{{Name: "a", Spec: "", Task: task}},
		{{Name: "a", Spec: "CRON_TZ=Nowhere/Else @daily", Task: task}},
	} {
		_, err := runtime.New(q, mux, runtime.Config{Periodic: ps})
		require.ErrorIs(t, err, runtime.ErrInvalidConfig, "%+v", ps)
	}
}
