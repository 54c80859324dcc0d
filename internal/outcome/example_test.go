package outcome_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/outcome"
	"github.com/overtake/overtake/queue"
)

func ExampleClassify() {
	busy := errors.New("upstream busy")
	for _, err := range []error{
		nil,
		busy,
		handlers.RetryAfter(30*time.Second, busy),
		handlers.SkipRetry(busy),
		handlers.Yield(nil),
	} {
		out := outcome.Classify(err)
		fmt.Println(out.Action, out.Delay)
	}
	// Output:
	// done 0s
	// retry 0s
	// retry_after 30s
	// dead 0s
	// requeue 0s
}

func ExampleClassifyContext() {
	// The runtime preempts a running handler by cancelling its context.
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(handlers.ErrPreempted)

	h := handlers.HandlerFunc(func(ctx context.Context, _ *queue.TaskInfo) error {
		<-ctx.Done()
		// A real handler saves its checkpoint here.
		return ctx.Err() // context.Canceled
	})
	err := h.ProcessTask(ctx, &queue.TaskInfo{Type: "report"})
	fmt.Println(errors.Is(context.Cause(ctx), handlers.ErrPreempted))
	fmt.Println(outcome.Classify(err).Action, outcome.ClassifyContext(ctx, err).Action)
	// Output:
	// true
	// retry requeue
}
