package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/redis/go-redis/v9"
)

// WelcomeArgs is the payload of a "welcome" task; it matches the worker's.
type WelcomeArgs struct {
	To string `json:"to"`
}

// enqueue enqueues a welcome email to to at the named level.
func enqueue(ctx context.Context, q *queue.Client, to, level string) (*queue.TaskInfo, error) {
	t, err := handlers.NewJSONTask("welcome", WelcomeArgs{To: to})
	if err != nil {
		return nil, err
	}
	return q.Enqueue(ctx, t, queue.LevelNamed(level))
}

func main() {
	if err := runMain(); err != nil {
		log.Fatal(err)
	}
}

// runMain is main with an error, so that its deferred calls run before
// the process exits.
func runMain() error {
	to, level := "ada@example.com", "normal"
	if len(os.Args) > 1 {
		to = os.Args[1]
	}
	if len(os.Args) > 2 {
		level = os.Args[2]
	}
	opt, err := redis.ParseURL(cmp.Or(os.Getenv("REDIS_URL"), "redis://127.0.0.1:6379"))
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	q, err := queue.New(rdb, queue.Config{}) // levels low, normal, high
	if err != nil {
		return err
	}
	t, err := enqueue(context.Background(), q, to, level)
	if err != nil {
		return err
	}
	fmt.Printf("enqueued %s: welcome email to %s at level %s\n", t.ID, to, level)
	return nil
}
