package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// The worker on an in-process Redis: three emails enqueued in mixed order
// before it starts are sent most urgent first.
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	q, err := queue.New(rdb, queue.Config{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, e := range []struct{ to, level string }{
		{"bob@example.com", "low"}, {"ada@example.com", "high"}, {"cy@example.com", "normal"},
	} {
		t, _ := handlers.NewJSONTask("welcome", WelcomeArgs{To: e.to})
		if _, err := q.Enqueue(ctx, t, queue.LevelNamed(e.level)); err != nil {
			panic(err)
		}
	}

	mux := handlers.NewMux()
	register(mux, q, os.Stdout)
	done := make(chan struct{}) // closed when the third email was sent
	sent := 0
	mux.Use(func(next handlers.Handler) handlers.Handler {
		return handlers.HandlerFunc(func(ctx context.Context, t *queue.TaskInfo) error {
			err := next.ProcessTask(ctx, t)
			if sent++; sent == 3 { // Concurrency 1: one at a time
				close(done)
			}
			return err
		})
	})
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 1})
	if err != nil {
		panic(err)
	}
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		panic("emails not sent within 10s")
	}
	if err := rt.Shutdown(ctx); err != nil { // waits for the last ack
		panic(err)
	}
	fmt.Println("sent:", rt.Stats().Processed)
	// Output:
	// welcome email to ada@example.com (high)
	// welcome email to cy@example.com (normal)
	// welcome email to bob@example.com (low)
	// sent: 3
}
