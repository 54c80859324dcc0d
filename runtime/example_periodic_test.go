package runtime_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A runtime enqueues a periodic task at each tick of its schedule (here
// every second), once across every runtime that has the schedule; the
// task keeps its options.
func ExamplePeriodic() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer func() { _ = rdb.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q, err := queue.New(rdb, queue.Config{})
	if err != nil {
		panic(err)
	}
	ran := make(chan *queue.TaskInfo, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("cleanup", func(_ context.Context, t *queue.TaskInfo) error {
		select {
		case ran <- t:
		default:
		}
		return nil
	})
	rt, err := runtime.New(q, mux, runtime.Config{Logger: zap.NewNop(), Periodic: []runtime.Periodic{
		{Name: "cleanup", Spec: "@every 1s", Task: queue.NewTask("cleanup", nil, queue.LevelNamed("high"))},
	}})
	if err != nil {
		panic(err)
	}
	stopped := make(chan error)
	go func() { stopped <- rt.Run(ctx) }()
	t := <-ran
	name, _, _ := strings.Cut(t.ID, "@") // "cleanup@2026-11-28T17:00:01Z"
	fmt.Println(name, t.Type, q.LevelName(t.Level))
	cancel()
	fmt.Println(<-stopped)
	// Output:
	// cleanup cleanup high
	// <nil>
}
