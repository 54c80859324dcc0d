package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// attemptSeen is what a handler saw of its task on one run.
type attemptSeen struct {
	Attempt   int
	LastError string
}

// A failing handler is retried with the queue's Backoff: the attempt count
// and the last error are recorded, and the third attempt succeeds.
func TestRetryWithBackoff(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		var mu sync.Mutex
		var backoffs []int
		q := setup(t, b, queue.Config{Backoff: func(attempt int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			backoffs = append(backoffs, attempt)
			return 20 * time.Millisecond
		}})
		runs := make(chan attemptSeen, 5)
		mux := handlers.NewMux()
		mux.HandleFunc("flaky", func(_ context.Context, tk *queue.TaskInfo) error {
			runs <- attemptSeen{tk.Attempt, tk.LastError}
			if tk.Attempt < 2 {
				return fmt.Errorf("failure %d", tk.Attempt+1)
			}
			return nil
		})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 2})
		id := enqueue(t, q, "flaky", "", 1)
		require.Equal(t, attemptSeen{0, ""}, receive(t, runs, "first attempt"))
		require.Equal(t, attemptSeen{1, "failure 1"}, receive(t, runs, "second attempt"))
		require.Equal(t, attemptSeen{2, "failure 2"}, receive(t, runs, "third attempt"))
		waitGone(t, q, id)
		mu.Lock()
		require.Equal(t, []int{1, 2}, backoffs, "Config.Backoff asked for retries 1 and 2")
		mu.Unlock()
		require.Eventually(t, func() bool {
			st := rt.Stats()
			return st.Processed == 3 && st.Failed == 2 && st.Dead == 0
		}, 10*time.Second, 5*time.Millisecond, "stats %+v", rt.Stats())
	})
}

// RetryAfter(d) overrides the queue's Backoff: the retry comes after d, not
// after the hour Backoff would ask for, and no earlier than d.
func TestRetryAfterSteering(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		const delay = 300 * time.Millisecond
		q := setup(t, b, queue.Config{Backoff: func(int) time.Duration { return time.Hour }})
		type run struct {
			seen attemptSeen
			at   time.Time
		}
		runs := make(chan run, 3)
		failedAt := make(chan time.Time, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("busy", func(_ context.Context, tk *queue.TaskInfo) error {
			runs <- run{attemptSeen{tk.Attempt, tk.LastError}, time.Now()}
			if tk.Attempt == 0 {
				failedAt <- time.Now()
				return handlers.RetryAfter(delay, errors.New("upstream busy"))
			}
			return nil
		})
		startRuntime(t, q, mux, runtime.Config{})
		id := enqueue(t, q, "busy", "", 0)
		require.Equal(t, 0, receive(t, runs, "first attempt").seen.Attempt)
		failed := receive(t, failedAt, "the failure")
		second := receive(t, runs, "the retry after the requested delay")
		require.Equal(t, 1, second.seen.Attempt)
		require.Contains(t, second.seen.LastError, "upstream busy")
		// Redis keeps milliseconds; allow for that truncation only.
		require.GreaterOrEqual(t, second.at.Sub(failed), delay-2*time.Millisecond, "retried before the delay")
		waitGone(t, q, id)
	})
}

// Once the retry budget is spent the task is dead-lettered with the error.
func TestRetriesExhaustedDeadLetters(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{Backoff: tinyBackoff})
		runs := make(chan int, 10)
		mux := handlers.NewMux()
		mux.HandleFunc("doomed", func(_ context.Context, tk *queue.TaskInfo) error {
			runs <- tk.Attempt
			return fmt.Errorf("boom on attempt %d", tk.Attempt+1)
		})
		rt := startRuntime(t, q, mux, runtime.Config{})
		id := enqueue(t, q, "doomed", "", 2, queue.MaxRetries(2))
		for i := 0; i < 3; i++ {
			require.Equal(t, i, receive(t, runs, "an attempt"))
		}
		dead := waitState(t, q, id, queue.StateDead)
		require.Equal(t, "retries exhausted: 3 failed of at most 3 (the first run and 2 retries): boom on attempt 3",
			dead.LastError, "the cause, and the runs against the budget in the CLI's words")
		require.Equal(t, 3, dead.Attempt)
		requireDeadLettered(t, q, id)
		require.Empty(t, runs, "ran after its budget was spent")
		// Counted once the dead letter is stored, which a reader of Redis
		// may see first.
		require.Eventually(t, func() bool { return rt.Stats().Dead == 1 }, 10*time.Second, time.Millisecond)
	})
}

// SkipRetry dead-letters the task at once, whatever its retry budget.
func TestSkipRetryDeadLettersAtOnce(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{Backoff: tinyBackoff})
		runs := make(chan int, 5)
		mux := handlers.NewMux()
		mux.HandleFunc("bad", func(_ context.Context, tk *queue.TaskInfo) error {
			runs <- tk.Attempt
			return handlers.SkipRetry(errors.New("invalid input: no recipient"))
		})
		startRuntime(t, q, mux, runtime.Config{})
		id := enqueue(t, q, "bad", "", 1) // default budget: 25 retries
		require.Equal(t, 0, receive(t, runs, "the only attempt"))
		dead := waitState(t, q, id, queue.StateDead)
		require.Equal(t, "invalid input: no recipient", dead.LastError)
		require.Equal(t, 1, dead.Attempt)
		requireDeadLettered(t, q, id)
		require.Empty(t, runs, "retried despite SkipRetry")
	})
}

// A task whose type has no handler is dead-lettered with a clear reason and
// the worker goes on with the next task.
func TestUnknownTypeDeadLettered(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		good := make(chan string, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("good", func(_ context.Context, tk *queue.TaskInfo) error {
			good <- tk.ID
			return nil
		})
		x := enqueue(t, q, "x", "", 1)
		g := enqueue(t, q, "good", "", 1)
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1})
		require.Equal(t, g, receive(t, good, "the good task after the unknown one"))
		dead := waitState(t, q, x, queue.StateDead)
		require.Equal(t, `no handler for type "x"`, dead.LastError)
		requireDeadLettered(t, q, x)
		waitGone(t, q, g)
		// Counted once the dead letter is stored, which a reader of Redis
		// may see first.
		require.Eventually(t, func() bool { return rt.Stats().Dead == 1 }, 10*time.Second, time.Millisecond)
	})
}

// A panicking handler is recovered and logged with its stack; the panic
// is a failed attempt (retried) and the worker survives. With no retries
// left the task is dead-lettered with the panic message.
func TestHandlerPanic(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{Backoff: tinyBackoff})
		log, logs := observedLogger(t)
		runs := make(chan attemptSeen, 5)
		good := make(chan string, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("once", func(_ context.Context, tk *queue.TaskInfo) error {
			runs <- attemptSeen{tk.Attempt, tk.LastError}
			if tk.Attempt == 0 {
				panic("kaboom")
			}
			return nil
		})
		mux.HandleFunc("always", func(context.Context, *queue.TaskInfo) error {
			var m map[string]int
			m["nil map"] = 1 //nolint:staticcheck // a runtime panic, on purpose
			return nil
		})
		mux.HandleFunc("good", func(_ context.Context, tk *queue.TaskInfo) error {
			good <- tk.ID
			return nil
		})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, Logger: log})
		once := enqueue(t, q, "once", "", 1)
		require.Equal(t, attemptSeen{0, ""}, receive(t, runs, "the panicking attempt"))
		retry := receive(t, runs, "the retry after the panic")
		require.Equal(t, 1, retry.Attempt)
		require.Contains(t, retry.LastError, "kaboom")
		waitGone(t, q, once)

		e := waitForLog(t, logs, "panic logged with its stack", func(e observer.LoggedEntry) bool {
			id, _ := fieldString(e, "task_id")
			return id == once && e.Message == "handler panicked"
		})
		require.GreaterOrEqual(t, e.Level, zapcore.ErrorLevel, "a panic is logged as an error")
		stack, ok := fieldString(e, "stack")
		require.True(t, ok, "no stack field")
		require.Contains(t, stack, "failure_test.go", "stack does not show the handler")
		require.Contains(t, stack, "goroutine")
		panicVal, _ := fieldString(e, "panic")
		require.Equal(t, "kaboom", panicVal)

		always := enqueue(t, q, "always", "", 1, queue.MaxRetries(0))
		g := enqueue(t, q, "good", "", 1)
		dead := waitState(t, q, always, queue.StateDead)
		require.Zero(t, dead.MaxRetries, "MaxRetries(0) reads back as 0")
		require.Equal(t, 1, dead.Attempt, "dead-lettered at its first failure")
		require.Contains(t, dead.LastError, "panic")
		require.Contains(t, dead.LastError, "assignment to entry in nil map")
		requireDeadLettered(t, q, always)
		require.Equal(t, g, receive(t, good, "a task after the panics"))
		// The dead letter reaches Redis before its run is counted (and on
		// shards good may run first).
		require.Eventually(t, func() bool { return rt.Stats().Failed >= 2 }, 10*time.Second, time.Millisecond)
		require.EqualValues(t, 2, rt.Stats().Failed)
	})
}

// A record that cannot be decoded is dead-lettered with a reason naming
// the problem; no handler runs it and the worker survives.
func TestMalformedRecordDeadLettered(t *testing.T) {
	skipOnShards(t, "it writes a record in shard 0 by hand")
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		corruptions := []struct{ field, value, want string }{
			{"max retries", "2|1|1|5|x|0|3:job0:0:", `"x" is not an integer`},
			{"headers", "2|1|1|5|25|0|3:job0:9:{not json", "headers"},
			{"timeout", "2|1|1|5|25|1.5|3:job0:0:", `"1.5" is not an integer`},
		}
		q := setup(t, b, queue.Config{})
		handled := make(chan string, 10)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
			handled <- tk.ID
			return nil
		})
		var bad, goods []string
		for _, c := range corruptions {
			id := enqueue(t, q, "job", "payload", 1)
			key := "{" + b.Prefix + ":" + q.Name() + "}:t:" + id
			require.EqualValues(t, 1, b.Client.Exists(context.Background(), key).Val(), "record key")
			require.NoError(t, b.Client.Set(context.Background(), key, c.value, 0).Err())
			bad = append(bad, id)
			goods = append(goods, enqueue(t, q, "job", "", 1))
		}
		startRuntime(t, q, mux, runtime.Config{Concurrency: 1})
		for _, g := range goods {
			require.Equal(t, g, receive(t, handled, "the good task after a malformed one"))
			waitGone(t, q, g)
		}
		for i, id := range bad {
			requireDeadLettered(t, q, id)
			rec, err := q.Inspect(context.Background(), id)
			require.ErrorIs(t, err, queue.ErrMalformedRecord)
			require.Equal(t, queue.StateDead, rec.State)
			require.Contains(t, rec.LastError, "malformed", corruptions[i].field)
			require.Contains(t, rec.LastError, corruptions[i].want)
		}
		require.Empty(t, handled, "a malformed record reached a handler")
	})
}

// An oversized payload is refused at enqueue and nothing is stored (but
// the queue's shape, which queue.New records).
func TestOversizedPayloadRefused(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{MaxPayloadBytes: 64})
		ctx := context.Background()
		_, err := q.Enqueue(ctx, queue.NewTask("job", []byte(strings.Repeat("x", 65))), queue.Level(2))
		require.ErrorIs(t, err, queue.ErrPayloadTooLarge)
		keys, err := b.Client.Keys(ctx, "*"+b.Prefix+"*").Result()
		require.NoError(t, err)
		require.Equal(t, []string{"{" + b.Prefix + ":default}:shape"}, keys, "a refused task left keys behind")
		st, err := q.Stats(ctx)
		require.NoError(t, err)
		for _, l := range st.Levels {
			require.Zero(t, l.Pending+l.Scheduled+l.Active+l.Dead, "level %d", l.Level)
		}
		// At the limit it is accepted.
		_, err = q.Enqueue(ctx, queue.NewTask("job", []byte(strings.Repeat("x", 64))), queue.Level(2))
		require.NoError(t, err)
	})
}

// A handler running past its task's Timeout is cancelled with the cause
// ErrTaskTimeout, and the attempt is retried.
func TestTaskTimeout(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{Backoff: tinyBackoff})
		causes := make(chan error, 2)
		runs := make(chan attemptSeen, 3)
		mux := handlers.NewMux()
		mux.HandleFunc("slow", func(ctx context.Context, tk *queue.TaskInfo) error {
			runs <- attemptSeen{tk.Attempt, tk.LastError}
			if tk.Attempt > 0 {
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		})
		startRuntime(t, q, mux, runtime.Config{})
		id := enqueue(t, q, "slow", "", 1, queue.Timeout(150*time.Millisecond))
		require.Equal(t, 0, receive(t, runs, "first attempt").Attempt)
		require.ErrorIs(t, receive(t, causes, "the timeout"), runtime.ErrTaskTimeout)
		retry := receive(t, runs, "the retry")
		require.Equal(t, 1, retry.Attempt)
		require.Contains(t, retry.LastError, runtime.ErrTaskTimeout.Error())
		waitGone(t, q, id)
	})
}

// requireDeadLettered checks that id is listed among the dead letters.
func requireDeadLettered(t *testing.T, q *queue.Client, id string) {
	t.Helper()
	dead, err := q.DeadTasks(context.Background(), 0, 100)
	require.NoError(t, err)
	for _, d := range dead {
		if d.ID == id {
			require.Equal(t, queue.StateDead, d.State)
			return
		}
	}
	t.Fatalf("task %s is not among the dead letters", id)
}
