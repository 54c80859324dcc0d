package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/overtake/overtake/queue"
	"github.com/redis/go-redis/v9"
)

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
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	const aging = time.Minute

	if len(os.Args) == 4 && os.Args[1] == "enqueue" { // producer mode
		n, err := strconv.Atoi(os.Args[3])
		if err != nil || n < 1 {
			return fmt.Errorf("usage: %s enqueue paying|free N", os.Args[0])
		}
		q, err := queue.New(rdb, queueConfig(aging))
		if err != nil {
			return err
		}
		for range n {
			if _, err := q.Enqueue(ctx, queue.NewTask(TypeReport, nil), queue.Class(os.Args[2])); err != nil {
				return err
			}
		}
		fmt.Printf("enqueued %d %s reports\n", n, os.Args[2])
		return nil
	} else if len(os.Args) != 1 {
		return fmt.Errorf("usage: %s [enqueue paying|free N]", os.Args[0])
	}

	reps := &Reports{Work: 2 * time.Second}
	_, rt, err := newWorker(rdb, reps, runtimeConfig(3, 1, 30*time.Second), aging)
	if err != nil {
		return err
	}
	log.Printf("tenants worker %s: pools paying (3 slots, SLA 30s) and free (1 slot, aging after %v)", rt.WorkerID(), aging)
	if err := rt.Run(ctx); err != nil {
		return err
	}
	return nil
}
