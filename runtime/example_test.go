package runtime_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A worker registers its handlers and runs until its context ends; a
// preempted or shut down handler saves its checkpoint and resumes from it.
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer func() { _ = rdb.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	q, err := queue.New(rdb, queue.Config{Name: "default"})
	if err != nil {
		panic(err)
	}
	type progress struct{ Row int }
	done := make(chan int)
	mux := handlers.NewMux()
	mux.HandleFunc("import", func(ctx context.Context, t *queue.TaskInfo) error {
		state, _, err := checkpoint.Load[progress](ctx) // zero on the first run
		if err != nil {
			return err
		}
		for state.Row < 3 {
			if ctx.Err() != nil { // preempted or shutting down
				_ = checkpoint.Save(ctx, state) // still allowed after cancel
				return context.Cause(ctx)
			}
			state.Row++ // ... work ...
		}
		done <- state.Row
		return nil
	})
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 8, Logger: zap.NewNop()})
	if err != nil {
		panic(err)
	}
	stopped := make(chan error)
	go func() { stopped <- rt.Run(ctx) }() // blocks; on ctx end, requeues every running task

	if _, err := q.Enqueue(ctx, queue.NewTask("import", nil)); err != nil {
		panic(err)
	}
	fmt.Println("imported rows:", <-done)
	cancel()
	fmt.Println("run returned:", <-stopped)
	// Output:
	// imported rows: 3
	// run returned: <nil>
}

// A handler stores its task's result; the producer reads it back with
// Inspect, also once the task completed and its record was deleted.
func Example_result() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer func() { _ = rdb.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	q, err := queue.New(rdb, queue.Config{ResultRetention: time.Hour}) // 24 h unless set
	if err != nil {
		panic(err)
	}
	stored := make(chan struct{}, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("count", func(ctx context.Context, t *queue.TaskInfo) error {
		words := len(strings.Fields(string(t.Payload)))
		err := handlers.SetResult(ctx, []byte(strconv.Itoa(words)))
		stored <- struct{}{}
		return err
	})
	rt, err := runtime.New(q, mux, runtime.Config{Logger: zap.NewNop()})
	if err != nil {
		panic(err)
	}
	stopped := make(chan error)
	go func() { stopped <- rt.Run(ctx) }()

	info, err := q.Enqueue(ctx, queue.NewTask("count", []byte("to be or not to be")))
	if err != nil {
		panic(err)
	}
	<-stored // the result is in Redis; the ack follows the handler's return
	cancel() // a clean shutdown records the finished task's ack before Run returns
	runErr := <-stopped
	if info, err = q.Inspect(context.Background(), info.ID); err != nil {
		panic(err)
	}
	// The record was deleted at the ack: the result alone is left.
	fmt.Println(info.State, info.ResultOnly, string(info.Result), info.ResultExpiresAt.Sub(info.ResultAt))
	fmt.Println("run returned:", runErr)
	// Output:
	// done true 6 1h0m0s
	// run returned: <nil>
}
