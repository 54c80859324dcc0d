package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Expected outcomes are not errors: the dead letter of a task its handler
// gave up on (SkipRetry), of an unknown type or of a malformed payload is
// a warning, with no stack trace even from a logger that adds one to
// errors (as zap's production logger does). A panic stays an error with
// the handler's stack, and so does the dead letter of a task whose
// retries ran out.
func TestExpectedDeadLettersAreWarnings(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		core, logs := observer.New(zapcore.DebugLevel)
		log := zap.New(core, zap.AddStacktrace(zapcore.ErrorLevel))
		mux := handlers.NewMux()
		mux.HandleFunc("hopeless", func(context.Context, *queue.TaskInfo) error {
			return handlers.SkipRetry(errors.New("bad input"))
		})
		handlers.HandleJSON(mux, "json", func(context.Context, *queue.TaskInfo, struct{ N int }) error { return nil })
		mux.HandleFunc("panics", func(context.Context, *queue.TaskInfo) error { panic("boom") })
		startRuntime(t, q, mux, runtime.Config{Concurrency: 2, Logger: log})
		expected := map[string]string{
			enqueue(t, q, "hopeless", "", 0):       "SkipRetry",
			enqueue(t, q, "nobody-handles", "", 0): "unknown type",
			enqueue(t, q, "json", "{not json", 0):  "malformed payload",
		}
		panicked := enqueue(t, q, "panics", "", 0, queue.MaxRetries(0))
		for id := range expected {
			waitState(t, q, id, queue.StateDead)
		}
		waitState(t, q, panicked, queue.StateDead)

		dead := func(id string) observer.LoggedEntry {
			return waitForLog(t, logs, "the dead letter of "+id, func(e observer.LoggedEntry) bool {
				got, _ := fieldString(e, "task_id")
				return got == id && e.Message == "task dead-lettered"
			})
		}
		for id, why := range expected {
			e := dead(id)
			require.Equal(t, zapcore.WarnLevel, e.Level, "%s: dead letter logged at %v", why, e.Level)
			require.Empty(t, e.Stack, "%s: dead letter logged with a stack trace", why)
			for _, other := range logs.All() {
				got, _ := fieldString(other, "task_id")
				require.False(t, got == id && other.Level >= zapcore.ErrorLevel, "%s: %q logged as an error", why, other.Message)
			}
		}
		e := waitForLog(t, logs, "the panic", func(e observer.LoggedEntry) bool {
			got, _ := fieldString(e, "task_id")
			return got == panicked && e.Message == "handler panicked"
		})
		require.Equal(t, zapcore.ErrorLevel, e.Level)
		stack, _ := fieldString(e, "stack")
		require.Contains(t, stack, "deadlog_test.go", "the panic's stack shows the handler")
		require.Equal(t, zapcore.ErrorLevel, dead(panicked).Level, "retries exhausted is an error")
	})
}
