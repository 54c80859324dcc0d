package handlers

import (
	"errors"
	"fmt"
	"time"
)

// Errors a handler returns or sees, each matched with errors.Is.
var (
	// ErrSkipRetry marks an error after which the task is dead-lettered at
	// once, whatever its retry budget. Return SkipRetry(err) to keep the
	// reason, or ErrSkipRetry itself.
	ErrSkipRetry = errors.New("overtake: skip retry")

	// ErrYield marks a handler that stopped voluntarily: the task is requeued
	// at the head of its level with its checkpoint, and the attempt is not
	// counted. Return Yield(err) to keep a reason, or ErrYield itself.
	ErrYield = errors.New("overtake: task yielded")

	// ErrPreempted is the cause of a handler's context cancelled because
	// more urgent work needs its slot: check it with
	// errors.Is(context.Cause(ctx), handlers.ErrPreempted). The handler
	// should save its checkpoint and return; the task is requeued at the
	// head of its level and the preemption is not a failed attempt. It
	// lives in package handlers so that handlers need not import the runtime.
	ErrPreempted = errors.New("overtake: preempted by more urgent work")

	// ErrShutdown is the cause of a handler's context cancelled because the
	// worker is shutting down. The runtime treats it like ErrPreempted:
	// checkpoint, requeue, no attempt counted.
	ErrShutdown = errors.New("overtake: worker shutting down")

	// ErrCanceled is the cause of a handler's context cancelled because
	// the task was canceled (queue.Client.Cancel): check it with
	// errors.Is(context.Cause(ctx), handlers.ErrCanceled). The handler
	// should stop and return within the grace period; it need save
	// nothing, as a canceled task never resumes: its checkpoint is
	// deleted and it ends canceled, not retried, whatever it returns,
	// except nil (it succeeded first: the task is done).
	ErrCanceled = errors.New("overtake: task canceled")

	// ErrNoHandler is matched by the error a Mux returns for a task type
	// without a handler (a *NoHandlerError, which also matches ErrSkipRetry).
	ErrNoHandler = errors.New("overtake: no handler")

	// ErrMalformedPayload is matched by the error HandleJSON returns when a
	// payload does not decode; that error also matches ErrSkipRetry.
	ErrMalformedPayload = errors.New("overtake: malformed payload")
)

// SkipRetry wraps err so that the task is dead-lettered at once with err as
// the reason. The result matches ErrSkipRetry and, through Unwrap, err; its
// message is err's. SkipRetry(nil) returns ErrSkipRetry.
func SkipRetry(err error) error {
	if err == nil {
		return ErrSkipRetry
	}
	return &markedError{err: err, mark: ErrSkipRetry}
}

// Yield wraps err so that the task is requeued at the head of its level with
// its checkpoint, without counting an attempt: the handler stopped on its own
// (it hit a time budget, a resource is busy) and wants to continue later. The
// result matches ErrYield and err. Yield(nil) returns ErrYield.
//
// A handler that yields should save its checkpoint first. One that yields
// forever without progress runs forever; bound it yourself.
func Yield(err error) error {
	if err == nil {
		return ErrYield
	}
	return &markedError{err: err, mark: ErrYield}
}

// markedError adds a sentinel to an error without changing its message.
type markedError struct {
	err  error
	mark error
}

func (e *markedError) Error() string        { return e.err.Error() }
func (e *markedError) Unwrap() error        { return e.err }
func (e *markedError) Is(target error) bool { return target == e.mark }

// RetryAfterError is the error returned by RetryAfter; errors.As reads
// the delay from a possibly wrapped error.
type RetryAfterError struct {
	// Delay is how long to wait before the next attempt; never negative.
	Delay time.Duration
	// Err is the failure, or nil.
	Err error
}

// Error returns a message like "retry after 30s: upstream busy".
func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.Delay)
	}
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}

// Unwrap returns the wrapped failure.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err so that the task is retried after d instead of the
// default backoff. It is still a failed attempt: it counts against the retry
// budget, and when the budget is spent the task is dead-lettered. A negative
// d is treated as zero.
func RetryAfter(d time.Duration, err error) error {
	return &RetryAfterError{Delay: max(d, 0), Err: err}
}

// PreemptedError is the cause of a handler's context cancelled for more
// urgent work: it matches ErrPreempted with errors.Is, and errors.As gives
// the task that took the slot.
type PreemptedError struct {
	// ByID and ByLevel name the urgent task that took the slot.
	ByID    string
	ByLevel int
}

// Error describes the preemption.
func (e *PreemptedError) Error() string {
	return fmt.Sprintf("%v: by task %s at level %d", ErrPreempted, e.ByID, e.ByLevel)
}

// Is reports whether target is ErrPreempted.
func (e *PreemptedError) Is(target error) bool { return target == ErrPreempted }
