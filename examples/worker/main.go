package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/redis/go-redis/v9"
)

// WelcomeArgs is the payload of a "welcome" task.
type WelcomeArgs struct {
	To string `json:"to"`
}

// register adds the worker's handlers to mux; they write to out.
func register(mux *handlers.Mux, q *queue.Client, out io.Writer) {
	handlers.HandleJSON(mux, "welcome", func(ctx context.Context, t *queue.TaskInfo, a WelcomeArgs) error {
		_, err := fmt.Fprintf(out, "welcome email to %s (%s)\n", a.To, q.LevelName(t.Level))
		return err
	})
}

func main() {
	if err := runMain(); err != nil {
		log.Fatal(err)
	}
}

// runMain is main with an error, so that its deferred calls run before
// the process exits.
func runMain() error {
	opt, err := redis.ParseURL(cmp.Or(os.Getenv("REDIS_URL"), "redis://127.0.0.1:6379"))
	if err != nil {
		return err
	}
	q, err := queue.New(redis.NewClient(opt), queue.Config{}) // levels low, normal, high
	if err != nil {
		return err
	}
	mux := handlers.NewMux()
	register(mux, q, os.Stdout)
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 4})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rt.Run(ctx); err != nil {
		return err
	}
	return nil
}
