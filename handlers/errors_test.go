package handlers_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/overtake/overtake/handlers"
)

func TestSteeringErrors(t *testing.T) {
	t.Parallel()
	cause := errors.New("boom")
	tests := []struct {
		name    string
		err     error
		msg     string
		is      []error
		isNot   []error
		delay   time.Duration
		delayOK bool
	}{
		{name: "skip retry", err: handlers.SkipRetry(cause), msg: "boom",
			is: []error{handlers.ErrSkipRetry, cause}, isNot: []error{handlers.ErrYield}},
		{name: "skip retry nil", err: handlers.SkipRetry(nil), msg: handlers.ErrSkipRetry.Error(),
			is: []error{handlers.ErrSkipRetry}},
		{name: "skip retry wrapped", err: fmt.Errorf("send: %w", handlers.SkipRetry(cause)), msg: "send: boom",
			is: []error{handlers.ErrSkipRetry, cause}},
		{name: "yield", err: handlers.Yield(cause), msg: "boom",
			is: []error{handlers.ErrYield, cause}, isNot: []error{handlers.ErrSkipRetry}},
		{name: "yield nil", err: handlers.Yield(nil), msg: handlers.ErrYield.Error(),
			is: []error{handlers.ErrYield}},
		{name: "retry after", err: handlers.RetryAfter(30*time.Second, cause), msg: "retry after 30s: boom",
			is: []error{cause}, isNot: []error{handlers.ErrSkipRetry}, delay: 30 * time.Second, delayOK: true},
		{name: "retry after nil", err: handlers.RetryAfter(time.Second, nil), msg: "retry after 1s",
			delay: time.Second, delayOK: true},
		{name: "retry after negative", err: handlers.RetryAfter(-time.Second, cause), msg: "retry after 0s: boom",
			delay: 0, delayOK: true},
		{name: "retry after wrapped", err: fmt.Errorf("x: %w", handlers.RetryAfter(time.Minute, cause)),
			msg: "x: retry after 1m0s: boom", is: []error{cause}, delay: time.Minute, delayOK: true},
		{name: "plain", err: cause, msg: "boom", isNot: []error{handlers.ErrSkipRetry, handlers.ErrYield}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.EqualError(t, tt.err, tt.msg)
			for _, target := range tt.is {
				assert.ErrorIs(t, tt.err, target)
			}
			for _, target := range tt.isNot {
				assert.NotErrorIs(t, tt.err, target)
			}
			var ra *handlers.RetryAfterError
			ok := errors.As(tt.err, &ra)
			assert.Equal(t, tt.delayOK, ok)
			if ok {
				assert.Equal(t, tt.delay, ra.Delay)
			}
		})
	}
}

func TestRetryAfterErrorAs(t *testing.T) {
	t.Parallel()
	var ra *handlers.RetryAfterError
	err := fmt.Errorf("wrap: %w", handlers.RetryAfter(5*time.Second, nil))
	if assert.ErrorAs(t, err, &ra) {
		assert.Equal(t, 5*time.Second, ra.Delay)
		assert.NoError(t, ra.Err)
	}
	assert.False(t, errors.As(nil, &ra))
}

func TestPreemptedError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("wrapped: %w", &handlers.PreemptedError{ByID: "u1", ByLevel: 2})
	assert.ErrorIs(t, err, handlers.ErrPreempted)
	assert.NotErrorIs(t, err, handlers.ErrShutdown)
	var pe *handlers.PreemptedError
	assert.ErrorAs(t, err, &pe)
	assert.Equal(t, "u1", pe.ByID)
	assert.Contains(t, err.Error(), "by task u1 at level 2")
}
