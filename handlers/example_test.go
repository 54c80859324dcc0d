package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

type EmailArgs struct {
	To string `json:"to"`
}

func ExampleMux() {
	mux := handlers.NewMux()
	mux.Use(func(next handlers.Handler) handlers.Handler {
		return handlers.HandlerFunc(func(ctx context.Context, t *queue.Task) error {
			err := next.ProcessTask(ctx, t)
			fmt.Printf("%s: %v\n", t.Type, handlers.Classify(err).Action)
			return err
		})
	})
	mux.HandleFunc("ping", func(context.Context, *queue.Task) error { return nil })

	_ = mux.ProcessTask(context.Background(), queue.NewTask("ping", nil))
	err := mux.ProcessTask(context.Background(), queue.NewTask("email", nil))
	fmt.Println(err)
	// Output:
	// ping: done
	// email: dead
	// no handler for type "email"
}

func ExampleHandleJSON() {
	mux := handlers.NewMux()
	handlers.HandleJSON(mux, "email", func(_ context.Context, _ *queue.Task, args EmailArgs) error {
		fmt.Println("send to", args.To)
		return nil
	})

	task, _ := handlers.NewJSONTask("email", EmailArgs{To: "ada@example.com"})
	fmt.Println(mux.ProcessTask(context.Background(), task))

	err := mux.ProcessTask(context.Background(), queue.NewTask("email", []byte("not json")))
	fmt.Println(handlers.Classify(err).Action, "-", err)
	// Output:
	// send to ada@example.com
	// <nil>
	// dead - overtake: malformed payload for type "email": invalid character 'o' in literal null (expecting 'u')
}

func ExampleClassify() {
	busy := errors.New("upstream busy")
	for _, err := range []error{
		nil,
		busy,
		handlers.RetryAfter(30*time.Second, busy),
		handlers.SkipRetry(busy),
		handlers.Yield(nil),
	} {
		out := handlers.Classify(err)
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

	h := handlers.HandlerFunc(func(ctx context.Context, _ *queue.Task) error {
		<-ctx.Done()
		// A real handler saves its checkpoint here.
		return ctx.Err() // context.Canceled
	})
	err := h.ProcessTask(ctx, queue.NewTask("report", nil))
	fmt.Println(errors.Is(context.Cause(ctx), handlers.ErrPreempted))
	fmt.Println(handlers.Classify(err).Action, handlers.ClassifyContext(ctx, err).Action)
	// Output:
	// true
	// retry requeue
}

func ExampleRecoverPanic() {
	err := handlers.RecoverPanic(func() error {
		var args *EmailArgs
		fmt.Println(args.To)
		return nil
	})
	var pe *handlers.PanicError
	fmt.Println(errors.As(err, &pe), err)
	// Output:
	// true panic: runtime error: invalid memory address or nil pointer dereference
}
