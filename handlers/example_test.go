package handlers_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

type EmailArgs struct {
	To string `json:"to"`
}

func ExampleMux() {
	mux := handlers.NewMux()
	mux.Use(func(next handlers.Handler) handlers.Handler {
		return handlers.HandlerFunc(func(ctx context.Context, t *queue.TaskInfo) error {
			err := next.ProcessTask(ctx, t)
			fmt.Printf("%s: no handler %v\n", t.Type, errors.Is(err, handlers.ErrNoHandler))
			return err
		})
	})
	mux.HandleFunc("ping", func(context.Context, *queue.TaskInfo) error { return nil })

	_ = mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: "ping"})
	err := mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: "email"})
	fmt.Println(err)
	// Output:
	// ping: no handler false
	// email: no handler true
	// no handler for type "email"
}

func ExampleHandleJSON() {
	mux := handlers.NewMux()
	handlers.HandleJSON(mux, "email", func(_ context.Context, _ *queue.TaskInfo, args EmailArgs) error {
		fmt.Println("send to", args.To)
		return nil
	})

	task, _ := handlers.NewJSONTask("email", EmailArgs{To: "ada@example.com"})
	fmt.Println(mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: task.Type(), Payload: task.Payload()}))

	err := mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: "email", Payload: []byte("not json")})
	fmt.Println(errors.Is(err, handlers.ErrMalformedPayload), "-", err)
	// Output:
	// send to ada@example.com
	// <nil>
	// true - overtake: malformed payload for type "email": invalid character 'o' in literal null (expecting 'u')
}

func ExampleRecover() {
	mux := handlers.NewMux()
	mux.Use(handlers.Recover())
	mux.HandleFunc("email", func(context.Context, *queue.TaskInfo) error {
		var args *EmailArgs
		fmt.Println(args.To) // panics
		return nil
	})
	err := mux.ProcessTask(context.Background(), &queue.TaskInfo{Type: "email"})
	var pe *handlers.PanicError
	fmt.Println(errors.As(err, &pe), err)
	// Output:
	// true panic: runtime error: invalid memory address or nil pointer dereference
}
