package runtime_test

import (
	"github.com/overtake/overtake/internal/ckpt"

	"github.com/overtake/overtake/internal/store"

	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Helpers of the foundation tests (lifecycle, failure, shutdown, recovery,
// outage).

// observedLogger returns a logger that records every entry from Debug up,
// and still writes them to the test log for debugging.
func observedLogger(t *testing.T) (*zap.Logger, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(zapcore.NewTee(core, zaptest.NewLogger(t).Core())), logs
}

// waitForLog waits until an entry matching ok was logged and returns it.
func waitForLog(t *testing.T, logs *observer.ObservedLogs, what string, ok func(observer.LoggedEntry) bool) observer.LoggedEntry {
	t.Helper()
	var found observer.LoggedEntry
	require.Eventually(t, func() bool {
		for _, e := range logs.All() {
			if ok(e) {
				found = e
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "no log entry: %s", what)
	return found
}

// fieldString returns the value of a string or integer field of e.
func fieldString(e observer.LoggedEntry, key string) (string, bool) {
	v, ok := e.ContextMap()[key]
	if !ok {
		return "", false
	}
	return fmt.Sprint(v), true
}

// waitGone waits until the record of task id is deleted (acked).
func waitGone(t *testing.T, q *queue.Client, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := q.Inspect(context.Background(), id)
		return errors.Is(err, queue.ErrTaskNotFound)
	}, 10*time.Second, 5*time.Millisecond, "task %s never acked", id)
}

// waitState waits until task id is in state st and returns its record.
func waitState(t *testing.T, q *queue.Client, id string, st queue.State) *queue.TaskInfo {
	t.Helper()
	var got *queue.TaskInfo
	require.Eventually(t, func() bool {
		tk, err := q.Inspect(context.Background(), id)
		if err != nil {
			return false
		}
		got = tk
		return tk.State == st
	}, 10*time.Second, 5*time.Millisecond, "task %s never reached state %s", id, st)
	return got
}

// tinyBackoff is a queue.Config.Backoff for tests: retries are due at once.
func tinyBackoff(int) time.Duration { return 10 * time.Millisecond }

// waitSubscribed waits until some runtime listens on q's wake channel, so
// an enqueue is sure to be announced to it.
func waitSubscribed(t *testing.T, b testredis.Backend, q *queue.Client) {
	t.Helper()
	require.Eventually(t, func() bool {
		n, err := b.Client.PubSubNumSub(context.Background(), store.Of(q).WakeChannel()).Result()
		return err == nil && n[store.Of(q).WakeChannel()] >= 1
	}, 10*time.Second, 5*time.Millisecond, "runtime never subscribed to the wake channel")
}

// Every state change of a task is logged with its ID, type and level (and
// the trace ID of its process span).
func TestStateChangesLogged(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{Backoff: tinyBackoff})
		log, logs := observedLogger(t)
		mux := handlers.NewMux()
		mux.HandleFunc("ok", func(context.Context, *queue.TaskInfo) error { return nil })
		mux.HandleFunc("flaky", func(_ context.Context, tk *queue.TaskInfo) error {
			if tk.Attempt == 0 {
				return errors.New("first attempt fails")
			}
			return nil
		})
		mux.HandleFunc("skip", func(context.Context, *queue.TaskInfo) error {
			return handlers.SkipRetry(errors.New("hopeless"))
		})
		mux.HandleFunc("yield", func(ctx context.Context, tk *queue.TaskInfo) error {
			if tk.CheckpointSeq == 0 {
				h, _ := ckpt.FromContext(ctx)
				assert.NoError(t, h.Save(ctx, []byte("half")))
				return handlers.Yield(nil)
			}
			return nil
		})
		type info struct {
			typ   string
			level int
		}
		tasks := map[string]info{}
		for i, typ := range []string{"ok", "flaky", "skip", "yield"} {
			tasks[enqueue(t, q, typ, "", i%3)] = info{typ, i % 3}
		}
		tp := sdktrace.NewTracerProvider()
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		startRuntime(t, q, mux, runtime.Config{Concurrency: 2, Logger: log, TracerProvider: tp})
		var skipID string
		for id, in := range tasks {
			if in.typ == "skip" {
				skipID = id
				waitState(t, q, id, queue.StateDead)
			} else {
				waitGone(t, q, id)
			}
		}

		// Each transition was logged, for the right task.
		want := map[string][]string{ // message -> task types it must be logged for
			"task started":                       {"ok", "flaky", "skip", "yield"},
			"task done":                          {"ok", "flaky", "yield"},
			"task failed; retry scheduled":       {"flaky"},
			"task dead-lettered":                 {"skip"},
			"task requeued at head of its level": {"yield"},
			"task resumed from checkpoint":       {"yield"},
		}
		require.Eventually(t, func() bool { // each line is logged after its Redis call
			return logs.FilterMessage("task done").Len() >= 3 &&
				logs.FilterMessage("task dead-lettered").Len() >= 1 &&
				logs.FilterMessage("task requeued at head of its level").Len() >= 1
		}, 10*time.Second, 5*time.Millisecond)
		for msg, types := range want {
			got := map[string]bool{}
			for _, e := range logs.FilterMessage(msg).All() {
				id, _ := fieldString(e, "task_id")
				got[tasks[id].typ] = true
			}
			for _, typ := range types {
				require.True(t, got[typ], "%q not logged for the %s task", msg, typ)
			}
		}
		// Every line about a task carries its ID, type, level and trace ID.
		n := 0
		for _, e := range logs.All() {
			id, ok := fieldString(e, "task_id")
			if !ok {
				continue
			}
			n++
			in, known := tasks[id]
			require.True(t, known, "line %q names unknown task %s", e.Message, id)
			typ, _ := fieldString(e, "task_type")
			lvl, _ := fieldString(e, "task_level")
			require.Equal(t, in.typ, typ, "task_type of %q", e.Message)
			require.Equal(t, fmt.Sprint(in.level), lvl, "task_level of %q", e.Message)
			tid, ok := fieldString(e, "trace_id")
			require.True(t, ok && len(tid) == 32, "trace_id of %q: %q", e.Message, tid)
		}
		require.GreaterOrEqual(t, n, 12)
		dead, err := q.Inspect(context.Background(), skipID)
		require.NoError(t, err)
		require.Equal(t, "hopeless", dead.LastError)
	})
}

// An idle runtime is woken by the enqueue's announcement, not by its poll:
// with a one-minute poll, a task enqueued on an idle runtime runs at once.
func TestIdleWakeUpByPubSub(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		ran := make(chan string, 2)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
			ran <- tk.ID
			return nil
		})
		startRuntime(t, q, mux, runtime.Config{Concurrency: 2, PollInterval: time.Minute})
		waitSubscribed(t, b, q)
		// Twice: the first may meet the dispatcher's first look; the second
		// surely finds it idle, waiting for its one-minute poll.
		for i := 0; i < 2; i++ {
			id := enqueue(t, q, "job", "", 1)
			require.Equal(t, id, receive(t, ran, "the task to run long before the poll"))
			waitGone(t, q, id)
		}
	})
}

// A delayed task is scheduled until due, runs only then, and runs when due
// even on an idle runtime with a slow poll.
func TestDelayedTask(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		ran := make(chan time.Time, 2)
		mux := handlers.NewMux()
		mux.HandleFunc("later", func(context.Context, *queue.TaskInfo) error {
			ran <- time.Now()
			return nil
		})
		mux.HandleFunc("now", func(context.Context, *queue.TaskInfo) error { return nil })
		startRuntime(t, q, mux, runtime.Config{PollInterval: time.Minute})
		waitSubscribed(t, b, q)
		// Make sure the dispatcher has looked once and waits for its poll.
		waitGone(t, q, enqueue(t, q, "now", "", 0))

		tk, err := q.Enqueue(context.Background(), queue.NewTask("later", nil), queue.ProcessIn(300*time.Millisecond))
		require.NoError(t, err)
		got, err := q.Inspect(context.Background(), tk.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StateScheduled, got.State)
		at := receive(t, ran, "the delayed task")
		// Redis keeps milliseconds: it ran no earlier than its due millisecond.
		require.False(t, at.Before(tk.ProcessAt.Truncate(time.Millisecond)),
			"ran %v before due %v", at, tk.ProcessAt)
		waitGone(t, q, tk.ID)
	})
}

// With Concurrency N, never more than N handlers run at once; every task
// runs exactly once.
func TestConcurrencyLimit(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		const n, total = 4, 200
		q := setup(t, b, queue.Config{})
		var inflight, peak atomic.Int64
		var mu sync.Mutex
		runs := map[string]int{}
		started := make(chan struct{}, total)
		gate := make(chan struct{})
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
			cur := inflight.Add(1)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			mu.Lock()
			runs[tk.ID]++
			mu.Unlock()
			started <- struct{}{}
			<-gate
			inflight.Add(-1)
			return nil
		})
		tasks := make([]*queue.Task, total)
		for i := range tasks {
			tasks[i] = queue.NewTask("job", []byte(fmt.Sprint(i)))
		}
		out, err := q.EnqueueBatch(context.Background(), tasks, queue.Level(1))
		require.NoError(t, err)
		startRuntime(t, q, mux, runtime.Config{Concurrency: n})

		// Release one handler at a time, each time only once the pool is
		// full: a runtime that ran more than n at once would show it here.
		startedN := 0
		for released := 0; released < total; released++ {
			for startedN-released < min(n, total-released) {
				receive(t, started, "a handler to start")
				startedN++
			}
			select {
			case gate <- struct{}{}:
			case <-time.After(10 * time.Second):
				t.Fatal("no handler took the gate")
			}
		}
		require.EqualValues(t, n, peak.Load(), "peak concurrency")
		for _, tk := range out {
			waitGone(t, q, tk.ID)
		}
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, runs, total)
		for id, c := range runs {
			require.Equal(t, 1, c, "task %s ran %d times", id, c)
		}
	})
}

// New rejects bad configurations with ErrInvalidConfig; Start, Shutdown and
// Run keep their contract.
func TestConfigValidation(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{LeaseDuration: time.Second})
		mux := handlers.NewMux()
		bad := map[string]runtime.Config{
			"negative concurrency":         {Concurrency: -1},
			"heartbeat not under lease":    {HeartbeatInterval: time.Second},
			"negative heartbeat":           {HeartbeatInterval: -time.Millisecond},
			"poll under 1ms":               {PollInterval: time.Microsecond},
			"negative grace":               {GracePeriod: -time.Second},
			"negative shutdown timeout":    {ShutdownTimeout: -time.Second},
			"negative drain":               {DrainTimeout: -time.Second},
			"unknown urgent start":         {UrgentStart: runtime.UrgentStart(7)},
			"invalid preemption policy":    {Preemption: preempt.Policy{MinRunTime: -time.Second}},
			"preemption gap under 1 level": {Preemption: preempt.Policy{MinLevelGap: -1}},
			"negative max redis backoff":   {MaxRedisBackoff: -time.Second},
			"max redis backoff under 1ms":  {MaxRedisBackoff: time.Microsecond},
			"fleet deferral below forever": {Preemption: preempt.Policy{FleetDeferral: -2}},
		}
		for name, cfg := range bad {
			_, err := runtime.New(q, mux, cfg)
			require.ErrorIs(t, err, runtime.ErrInvalidConfig, name)
		}
		_, err := runtime.New(nil, mux, runtime.Config{})
		require.ErrorIs(t, err, runtime.ErrInvalidConfig)
		_, err = runtime.New(q, nil, runtime.Config{})
		require.ErrorIs(t, err, runtime.ErrInvalidConfig)

		rt, err := runtime.New(q, mux, runtime.Config{Logger: zaptest.NewLogger(t)})
		require.NoError(t, err)
		require.ErrorIs(t, rt.Shutdown(context.Background()), runtime.ErrNotStarted)
		require.NoError(t, rt.Start(context.Background()))
		require.Error(t, rt.Start(context.Background()), "second Start")
		require.NoError(t, rt.Shutdown(context.Background()))

		// Run returns once its context ends, after a clean shutdown.
		rt, err = runtime.New(q, mux, runtime.Config{Logger: zaptest.NewLogger(t)})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() { res <- rt.Run(ctx) }()
		ran := make(chan struct{})
		mux.HandleFunc("job", func(context.Context, *queue.TaskInfo) error { close(ran); return nil })
		id := enqueue(t, q, "job", "", 0)
		receive(t, ran, "a task run by Run")
		waitGone(t, q, id)
		cancel()
		require.NoError(t, receive(t, res, "Run to return"))
	})
}
