package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/overtake/overtake/handlers"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name   string
		err    error
		action handlers.Action
		delay  time.Duration
	}{
		{"nil", nil, handlers.ActionDone, 0},
		{"plain", boom, handlers.ActionRetry, 0},
		{"canceled", context.Canceled, handlers.ActionRetry, 0},
		{"panic", &handlers.PanicError{Value: "x"}, handlers.ActionRetry, 0},
		{"retry after", handlers.RetryAfter(time.Minute, boom), handlers.ActionRetryAfter, time.Minute},
		{"skip retry", handlers.SkipRetry(boom), handlers.ActionDead, 0},
		{"no handler", &handlers.NoHandlerError{Type: "x"}, handlers.ActionDead, 0},
		{"skip beats retry after", handlers.SkipRetry(handlers.RetryAfter(time.Minute, boom)), handlers.ActionDead, 0},
		{"skip beats yield", handlers.SkipRetry(handlers.Yield(boom)), handlers.ActionDead, 0},
		{"yield", handlers.Yield(boom), handlers.ActionRequeue, 0},
		{"preempted", handlers.ErrPreempted, handlers.ActionRequeue, 0},
		{"shutdown wrapped", fmt.Errorf("stop: %w", handlers.ErrShutdown), handlers.ActionRequeue, 0},
		{"joined", errors.Join(boom, handlers.ErrPreempted), handlers.ActionRequeue, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := handlers.Classify(tt.err)
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
		action handlers.Action
	}{
		{"live ctx plain error", context.Background(), boom, handlers.ActionRetry},
		{"preempted ctx.Err", cancelled(handlers.ErrPreempted), context.Canceled, handlers.ActionRequeue},
		{"preempted other error", cancelled(handlers.ErrPreempted), boom, handlers.ActionRequeue},
		{"shutdown ctx.Err", cancelled(handlers.ErrShutdown), context.Canceled, handlers.ActionRequeue},
		{"preempted but finished", cancelled(handlers.ErrPreempted), nil, handlers.ActionDone},
		{"preempted skip retry kept", cancelled(handlers.ErrPreempted), handlers.SkipRetry(boom), handlers.ActionDead},
		{"preempted retry after kept", cancelled(handlers.ErrPreempted), handlers.RetryAfter(time.Second, boom), handlers.ActionRetryAfter},
		{"other cause", cancelled(boom), context.Canceled, handlers.ActionRetry},
		{"timeout", timedOut, context.DeadlineExceeded, handlers.ActionRetry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := handlers.ClassifyContext(tt.ctx, tt.err)
			assert.Equal(t, tt.action, out.Action, out.Action.String())
			assert.Equal(t, tt.err, out.Err)
		})
	}
}

func TestActionString(t *testing.T) {
	t.Parallel()
	want := map[handlers.Action]string{
		handlers.ActionDone:       "done",
		handlers.ActionRetry:      "retry",
		handlers.ActionRetryAfter: "retry_after",
		handlers.ActionDead:       "dead",
		handlers.ActionRequeue:    "requeue",
		handlers.Action(-1):       "unknown",
		handlers.Action(99):       "unknown",
	}
	for a, s := range want {
		assert.Equal(t, s, a.String())
	}
}
