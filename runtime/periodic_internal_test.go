package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// Every runtime agrees on a schedule's ticks: intervals are multiples of
// their duration, cron expressions are read in UTC unless CRON_TZ says
// otherwise.
func TestScheduleTicks(t *testing.T) {
	task := queue.NewTask("t", nil)
	ss, err := parseSchedules([]Periodic{
		{Name: "every", Spec: "@every 5s", Task: task},
		{Name: "cron", Spec: "0 9 * * *", Task: task},
		{Name: "paris", Spec: "CRON_TZ=Europe/Paris 0 9 * * *", Task: task},
		{Name: "secs", Spec: "*/10 * * * * *", Task: task},
	})
	require.NoError(t, err)
	at := time.Date(2026, 11, 28, 12, 0, 3, 0, time.UTC)
	require.Equal(t, at.Add(2*time.Second), ss[0].next(at))
	require.Equal(t, at.Add(7*time.Second), ss[0].next(at.Add(2*time.Second)), "the tick after a tick")
	require.Equal(t, time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), ss[1].next(at).UTC())
	require.Equal(t, time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), ss[2].next(at).UTC())
	require.Equal(t, at.Add(7*time.Second), ss[3].next(at))
}

// The schedule's key holds the spec of the runtime that decided the last
// tick; a runtime whose spec differs says so once at warn (another spec
// found later once more), and still enqueues its own ticks. A shape
// mismatch is not retried and is logged once.
func TestPeriodicSpecAndShapeLoggedOnce(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		core, logs := zapobserver.New(zapcore.DebugLevel)
		newRuntime := func(cfg queue.Config, spec string) (*Runtime, *schedule) {
			cfg.Namespace = b.Prefix
			q, err := queue.New(b.Client, cfg)
			require.NoError(t, err)
			rt, err := New(q, handlers.NewMux(), Config{WorkerID: "w", Logger: zap.New(core),
				Periodic: []Periodic{{Name: "nightly", Spec: spec, Task: queue.NewTask("t", nil)}}})
			require.NoError(t, err)
			return rt, rt.sched.schedules[0]
		}
		count := func(msg string) int { return logs.FilterMessageSnippet(msg).Len() }
		const other = "another spec"
		at := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
		daily, ds := newRuntime(queue.Config{}, "@daily")
		hourly, hs := newRuntime(queue.Config{}, "@hourly")

		daily.sched.enqueueTick(ctx, ds, at)
		_, spec, err := daily.eng.LastTick(ctx, "nightly")
		require.NoError(t, err)
		require.Equal(t, "@daily", spec)
		for i := range 3 {
			hourly.sched.enqueueTick(ctx, hs, at.Add(time.Duration(i+1)*time.Hour))
		}
		require.Equal(t, 1, count(other), "the other spec, logged once")
		last, spec, err := hourly.eng.LastTick(ctx, "nightly")
		require.NoError(t, err)
		require.Equal(t, "@hourly", spec, "the newest writer's")
		require.Equal(t, at.Add(3*time.Hour), last.UTC())
		daily.sched.enqueueTick(ctx, ds, at.Add(24*time.Hour))
		require.Equal(t, 2, count(other), "the daily runtime finds the hourly spec")
		require.Len(t, logs.FilterMessage("periodic task enqueued").All(), 5, "each runtime enqueues its own ticks")

		// A worker made while Redis was down, of another shape than the
		// queue's: Enqueue refuses each tick; logged once, not retried.
		rdb, up := b.DownClient(t)
		q, err := queue.New(rdb, queue.Config{Namespace: b.Prefix, Name: "q5", Levels: 5})
		require.NoError(t, err)
		five, err := New(q, handlers.NewMux(), Config{WorkerID: "w", Logger: zap.New(core),
			Periodic: []Periodic{{Name: "nightly", Spec: "@hourly", Task: queue.NewTask("t", nil)}}})
		require.NoError(t, err)
		up()
		_, err = queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "q5", Levels: 2})
		require.NoError(t, err)
		fs := five.sched.schedules[0]
		five.sched.enqueueTick(ctx, fs, at)
		five.sched.enqueueTick(ctx, fs, at.Add(time.Hour))
		require.Equal(t, 1, count("differs from the queue's shape"))
		require.Zero(t, count("retrying"), "a shape mismatch is not retried")
	})
}
