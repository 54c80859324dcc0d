// Package outcome reads what the runtime does with a task from its
// handler's error: ack, retry, retry after a delay, dead-letter or requeue.
package outcome

import (
	"context"
	"errors"
	"time"

	"github.com/overtake/overtake/handlers"
)

// Action is what the runtime does with a task after its handler returned.
type Action int

// The actions Classify chooses between.
const (
	// ActionDone acks the task: the handler returned nil.
	ActionDone Action = iota
	// ActionRetry schedules a retry with the default backoff, counting a
	// failed attempt; once the retry budget is spent the task is
	// dead-lettered instead.
	ActionRetry
	// ActionRetryAfter is ActionRetry after Outcome.Delay (RetryAfter).
	ActionRetryAfter
	// ActionDead dead-letters the task now with Outcome.Err as the reason
	// (SkipRetry, unknown type, malformed payload).
	ActionDead
	// ActionRequeue puts the task back at the head of its level with its
	// checkpoint, not counting an attempt (Yield, preemption, shutdown).
	ActionRequeue
	// ActionCancel ends the task canceled: its context was cancelled with
	// the cause handlers.ErrCanceled and the handler did not succeed.
	ActionCancel
)

var actionNames = [...]string{"done", "retry", "retry_after", "dead", "requeue", "cancel"}

// String returns a lower-case name such as "retry_after", fit for logs and
// metric attributes.
func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "unknown"
}

// Outcome is the decision Classify reads from a handler's error.
type Outcome struct {
	// Action is what to do with the task.
	Action Action
	// Delay is the wait before the retry; set only for ActionRetryAfter.
	Delay time.Duration
	// Err is the handler's error, nil for ActionDone. Its message is the
	// task's last error or dead-letter reason.
	Err error
}

// Classify reads the steering from a handler's error. In order:
// nil is ActionDone; handlers.ErrSkipRetry is ActionDead; handlers.ErrYield, handlers.ErrPreempted and
// handlers.ErrShutdown are ActionRequeue; RetryAfter is ActionRetryAfter; anything
// else, a *PanicError included, is ActionRetry.
//
// Classify sees only the error. The runtime should use ClassifyContext,
// which also knows why the handler's context was cancelled.
func Classify(err error) Outcome {
	switch {
	case err == nil:
		return Outcome{Action: ActionDone}
	case errors.Is(err, handlers.ErrSkipRetry):
		return Outcome{Action: ActionDead, Err: err}
	case isRequeue(err):
		return Outcome{Action: ActionRequeue, Err: err}
	}
	if d, ok := retryDelay(err); ok {
		return Outcome{Action: ActionRetryAfter, Delay: d, Err: err}
	}
	return Outcome{Action: ActionRetry, Err: err}
}

// ClassifyContext is Classify for an error returned by a handler that ran
// with ctx. When ctx was cancelled with the cause handlers.ErrPreempted or handlers.ErrShutdown,
// a plain error (typically context.Canceled, or a failure caused by the
// cancellation) becomes ActionRequeue: the runtime stopped the task, so the
// failure is not the task's. Explicit steering (SkipRetry, RetryAfter) and a
// nil error (the task finished anyway) are kept. When the cause is
// handlers.ErrCanceled, any error becomes ActionCancel: a canceled task is
// neither retried, dead-lettered nor requeued; nil (it succeeded first) is
// still ActionDone.
func ClassifyContext(ctx context.Context, err error) Outcome {
	out := Classify(err)
	if err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), handlers.ErrCanceled) {
		return Outcome{Action: ActionCancel, Err: err}
	}
	if out.Action == ActionRetry && ctx.Err() != nil && isRequeue(context.Cause(ctx)) {
		out.Action = ActionRequeue
	}
	return out
}

func isRequeue(err error) bool {
	return errors.Is(err, handlers.ErrYield) || errors.Is(err, handlers.ErrPreempted) || errors.Is(err, handlers.ErrShutdown)
}

// retryDelay reports the delay requested with RetryAfter anywhere in err's
// chain, and whether there was one.
func retryDelay(err error) (time.Duration, bool) {
	var ra *handlers.RetryAfterError
	if errors.As(err, &ra) {
		return ra.Delay, true
	}
	return 0, false
}
