package outcome_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/outcome"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name   string
		err    error
		action outcome.Action
		delay  time.Duration
	}{
		{"nil", nil, outcome.ActionDone, 0},
		{"plain", boom, outcome.ActionRetry, 0},
		{"canceled", context.Canceled, outcome.ActionRetry, 0},
		{"panic", &handlers.PanicError{Value: "x"}, outcome.ActionRetry, 0},
		{"retry after", handlers.RetryAfter(time.Minute, boom), outcome.ActionRetryAfter, time.Minute},
		{"skip retry", handlers.SkipRetry(boom), outcome.ActionDead, 0},
		{"no handler", &handlers.NoHandlerError{Type: "x"}, outcome.ActionDead, 0},
		{"skip beats retry after", handlers.SkipRetry(handlers.RetryAfter(time.Minute, boom)), outcome.ActionDead, 0},
		{"skip beats yield", handlers.SkipRetry(handlers.Yield(boom)), outcome.ActionDead, 0},
		{"yield", handlers.Yield(boom), outcome.ActionRequeue, 0},
		{"preempted", handlers.ErrPreempted, outcome.ActionRequeue, 0},
		{"shutdown wrapped", fmt.Errorf("stop: %w", handlers.ErrShutdown), outcome.ActionRequeue, 0},
		{"joined", errors.Join(boom, handlers.ErrPreempted), outcome.ActionRequeue, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := outcome.Classify(tt.err)
			assert.Equal(t, tt.action, out.Action, out.Action.String())
			assert.Equal(t, tt.delay, out.Delay)
			assert.Equal(t, tt.err, out.Err)
		})
	}
}

func TestClassifyContext(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	cancelled := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	timedOut, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()

	tests := []struct {
		name   string
		ctx    context.Context
		err    error
		action outcome.Action
	}{
		{"live ctx plain error", context.Background(), boom, outcome.ActionRetry},
		{"preempted ctx.Err", cancelled(handlers.ErrPreempted), context.Canceled, outcome.ActionRequeue},
		{"preempted other error", cancelled(handlers.ErrPreempted), boom, outcome.ActionRequeue},
		{"shutdown ctx.Err", cancelled(handlers.ErrShutdown), context.Canceled, outcome.ActionRequeue},
		{"preempted but finished", cancelled(handlers.ErrPreempted), nil, outcome.ActionDone},
		{"preempted skip retry kept", cancelled(handlers.ErrPreempted), handlers.SkipRetry(boom), outcome.ActionDead},
		{"preempted retry after kept", cancelled(handlers.ErrPreempted), handlers.RetryAfter(time.Second, boom), outcome.ActionRetryAfter},
		{"other cause", cancelled(boom), context.Canceled, outcome.ActionRetry},
		{"timeout", timedOut, context.DeadlineExceeded, outcome.ActionRetry},
		{"canceled ctx.Err", cancelled(handlers.ErrCanceled), context.Canceled, outcome.ActionCancel},
		{"canceled skip retry", cancelled(handlers.ErrCanceled), handlers.SkipRetry(boom), outcome.ActionCancel},
		{"canceled yield", cancelled(handlers.ErrCanceled), handlers.ErrYield, outcome.ActionCancel},
		{"canceled but finished", cancelled(handlers.ErrCanceled), nil, outcome.ActionDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := outcome.ClassifyContext(tt.ctx, tt.err)
			assert.Equal(t, tt.action, out.Action, out.Action.String())
			assert.Equal(t, tt.err, out.Err)
		})
	}
}

func TestActionString(t *testing.T) {
	t.Parallel()
	want := map[outcome.Action]string{
		outcome.ActionDone:       "done",
		outcome.ActionRetry:      "retry",
		outcome.ActionRetryAfter: "retry_after",
		outcome.ActionDead:       "dead",
		outcome.ActionRequeue:    "requeue",
		outcome.ActionCancel:     "cancel",
		outcome.Action(-1):       "unknown",
		outcome.Action(99):       "unknown",
	}
	for a, s := range want {
		assert.Equal(t, s, a.String())
	}
}
