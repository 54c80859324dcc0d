package runtime_test

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Three worker processes share a schedule of a tick a second; one is
// killed with SIGKILL mid-run and restarted. Every tick from the first to
// the last runs exactly once: none twice, none lost while a worker runs.
// The handler acks each tick, so its record is gone when the next runtime
// tries the tick: only the schedule's key (periodic:tick) keeps a tick
// from running twice, not the ID's SET NX.
func TestPeriodicOnceAcrossWorkers(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		ctx := context.Background()
		spec := envWorkerPeriodic + "=@every 1s"
		procs := make([]*exec.Cmd, 3)
		for i, id := range []string{"p0", "p1", "p2"} {
			procs[i] = startWorkerProcess(t, b.Addr, b.Prefix, id, 1, spec)
		}
		ran := func() []string {
			ids, err := b.Client.LRange(ctx, ranKey(b.Prefix), 0, -1).Result()
			require.NoError(t, err)
			return ids
		}
		waitRuns := func(n int, what string) {
			require.Eventually(t, func() bool { return len(ran()) >= n }, 60*time.Second, 20*time.Millisecond, what)
		}
		waitRuns(3, "the workers run ticks")
		kill9(t, procs[0])
		n := len(ran())
		waitRuns(n+3, "the living workers go on")
		procs[0] = startWorkerProcess(t, b.Addr, b.Prefix, "p0", 1, spec)
		n = len(ran())
		waitRuns(n+3, "with the restarted one")
		for _, p := range procs {
			kill9(t, p)
		}

		ids := ran()
		runs := map[string]int{}
		var ticks []time.Time
		for _, id := range ids {
			if runs[id]++; runs[id] == 1 {
				stamp, _, _ := strings.Cut(strings.TrimPrefix(id, "tick@"), "~") // (~<n> on shards)
				at, err := time.Parse(time.RFC3339Nano, stamp)
				require.NoError(t, err, "task %q", id)
				ticks = append(ticks, at)
			}
		}
		for id, n := range runs {
			require.Equal(t, 1, n, "tick %s ran %d times", id, n)
		}
		slices.SortFunc(ticks, time.Time.Compare)
		for i := 1; i < len(ticks); i++ {
			require.Equal(t, time.Second, ticks[i].Sub(ticks[i-1]), "ticks %s and %s: one a second, none lost", ticks[i-1], ticks[i])
		}
		k := store.ShardOf("periodic:tick", q.Config().Shards) // the schedule's shard
		last, err := b.Client.Get(ctx, store.ShardTag(b.Prefix, "default", k)+":periodic:tick").Result()
		require.NoError(t, err)
		ms, spec, _ := strings.Cut(last, "|")
		require.Equal(t, "@every 1s", spec, "the schedule's last tick, with its spec")
		lastMS, err := strconv.ParseInt(ms, 10, 64)
		require.NoError(t, err)
		// A tick decided just before the kill may not have run.
		require.GreaterOrEqual(t, lastMS, ticks[len(ticks)-1].UnixMilli(), "the schedule's last tick")
		_, err = q.Inspect(ctx, ids[0])
		require.ErrorIs(t, err, queue.ErrTaskNotFound, "a tick is acked")
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
	tk := receive(t, ran, "a periodic run")
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
		// issue 30, row 1: refused at New, not logged at every tick.
		{{Name: "a", Spec: "@every 1s", Task: queue.NewTask("report", nil, queue.LevelNamed("hgih"))}},
		{{Name: "a", Spec: "@every 1s", Task: queue.NewTask("report", nil, queue.Class("gold"))}},
		{{Name: "a", Spec: "@every 1s", Task: queue.NewTask("report", nil, queue.Level(7))}},
		{{Name: "a", Spec: "@every 500ms", Task: task}},
		{{Name: "a", Spec: "@every 1500ms", Task: task}},
		{{Name: "a", Spec: "CRON_TZ=UTC @every 2s500ms", Task: task}},
	} {
		_, err := runtime.New(q, mux, runtime.Config{Periodic: ps})
		require.ErrorIs(t, err, runtime.ErrInvalidConfig, "%+v", ps)
	}
	_, err := runtime.New(q, mux, runtime.Config{Periodic: []runtime.Periodic{
		{Name: "a", Spec: "@every 1s", Task: queue.NewTask("report", nil, queue.LevelNamed("hgih"))}}})
	require.ErrorIs(t, err, queue.ErrInvalidLevel, "the queue's own error, for errors.Is")
	require.ErrorContains(t, err, `"hgih"`)
	_, err = runtime.New(q, mux, runtime.Config{Periodic: []runtime.Periodic{{Name: "a", Spec: "@every 500ms", Task: task}}})
	require.ErrorContains(t, err, "500ms would run every 1s")
	_, err = runtime.New(q, mux, runtime.Config{Periodic: []runtime.Periodic{{Name: "a", Spec: "@every 2s", Task: task},
		{Name: "b", Spec: "@every 1m", Task: task}}})
	require.NoError(t, err, "whole seconds are fine")
}
