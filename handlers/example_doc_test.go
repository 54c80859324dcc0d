package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/checkpoint/checkpointtest"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

// errBusy is what the mail server of the example answers.
var errBusy = errors.New("mail server busy")

// send is the example's mail client: busy for anyone at example.org.
func send(_ context.Context, args EmailArgs) error {
	if args.To == "bob@example.org" {
		return errBusy
	}
	fmt.Println("sent to", args.To)
	return nil
}

// The main flow of the package doc: a mux, middleware, a typed handler
// whose error asks for a retry after a minute.
func Example() {
	mux := handlers.NewMux()
	mux.Use(handlers.Recover())
	handlers.HandleJSON(mux, "email", func(ctx context.Context, t *queue.TaskInfo, args EmailArgs) error {
		if err := send(ctx, args); err != nil {
			return handlers.RetryAfter(time.Minute, err) // upstream asked us to back off
		}
		return nil
	})

	for _, to := range []string{"ada@example.com", "bob@example.org"} {
		task, _ := handlers.NewJSONTask("email", EmailArgs{To: to})
		err := mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: task.Type(), Payload: task.Payload()})
		var ra *handlers.RetryAfterError
		fmt.Println(err, errors.As(err, &ra), errors.Is(err, errBusy))
	}
	// Output:
	// sent to ada@example.com
	// <nil> false false
	// retry after 1m0s: mail server busy true true
}

// A preempted handler saves its checkpoint and returns the context's
// cause: ErrPreempted, which requeues the task with its checkpoint.
// checkpointtest.Saver stands in for the runtime's checkpoint store.
func Example_preempted() {
	count := func(ctx context.Context, _ *queue.TaskInfo) error {
		cursor, _, err := checkpoint.Load[int](ctx)
		if err != nil {
			return err
		}
		for ; ; cursor++ {
			select {
			case <-ctx.Done():
				if err := checkpoint.Save(ctx, cursor); err != nil {
					return err
				}
				return context.Cause(ctx) // ErrPreempted or ErrShutdown
			default:
			}
		}
	}

	saver := &checkpointtest.Saver{}
	task := saver.Lease(&queue.TaskInfo{ID: "count-1", Type: "count"}, "lease-1")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(handlers.ErrPreempted) // the runtime preempts the run
	err := count(saver.Context(ctx, task), task)
	saved, seq := saver.Checkpoint(task.ID)
	fmt.Println(errors.Is(err, handlers.ErrPreempted), string(saved), seq)
	// Output: true 0 1
}
