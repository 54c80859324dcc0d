package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/queue"
)

// newRedis starts an embedded Redis for an example; stop ends it.
func newRedis() (rdb *redis.Client, stop func()) {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb = redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { _ = rdb.Close(); mr.Close() }
}

// A producer enqueues tasks with a priority level and inspects them.
func Example() {
	rdb, stop := newRedis()
	defer stop()
	ctx := context.Background()

	payload := []byte(`{"to":"ada@example.com"}`)
	q, err := queue.New(rdb, queue.Config{Name: "default"}) // levels low, normal, high
	if err != nil {
		panic(err)
	}
	t, err := q.Enqueue(ctx, queue.NewTask("email", payload), queue.LevelNamed("high"))
	if err != nil {
		panic(err)
	}
	info, err := q.Inspect(ctx, t.ID) // state, level, attempts, checkpoint, last error
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Type, q.LevelName(info.Level), info.State, info.Attempt, info.MaxRetries)

	// An ID of one's own makes an enqueue safe to repeat.
	_, err = q.Enqueue(ctx, queue.NewTask("email", payload), queue.ID("welcome-ada"))
	fmt.Println(err)
	_, err = q.Enqueue(ctx, queue.NewTask("email", payload), queue.ID("welcome-ada"))
	fmt.Println(errors.Is(err, queue.ErrDuplicateTask))
	// Output:
	// email high pending 0 25
	// <nil>
	// true
}

// EnqueueBatch stores many tasks in one round trip; Depths counts what
// waits at each level, cheaply (one LLEN per level).
func ExampleClient_EnqueueBatch() {
	rdb, stop := newRedis()
	defer stop()
	ctx := context.Background()
	q, err := queue.New(rdb, queue.Config{})
	if err != nil {
		panic(err)
	}
	tasks := []*queue.Task{queue.NewTask("resize", nil), queue.NewTask("resize", nil), queue.NewTask("bill", nil, queue.Level(2))}
	if _, err := q.EnqueueBatch(ctx, tasks); err != nil {
		panic(err)
	}
	depths, err := q.Depths(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(depths[0], depths[1], depths[2])
	// Output: 2 0 1
}

// Pausing a level stops workers leasing from it; its tasks wait.
func ExampleClient_Pause() {
	rdb, stop := newRedis()
	defer stop()
	ctx := context.Background()
	q, err := queue.New(rdb, queue.Config{})
	if err != nil {
		panic(err)
	}
	if err := q.Pause(ctx, 0, queue.PauseWait); err != nil {
		panic(err)
	}
	paused, _ := q.Paused(ctx)
	fmt.Println(paused)
	_ = q.Resume(ctx, queue.AllLevels)
	paused, _ = q.Paused(ctx)
	fmt.Println(len(paused))
	// Output:
	// map[0:paused]
	// 0
}

// Unique refuses a task while an equal one (same type and payload) holds
// its lock: until it succeeds, or for ttl.
func ExampleUnique() {
	rdb, stop := newRedis()
	defer stop()
	ctx := context.Background()
	q, err := queue.New(rdb, queue.Config{})
	if err != nil {
		panic(err)
	}
	report := queue.NewTask("report", []byte(`{"day":"2026-11-28"}`), queue.Unique(time.Hour), queue.LevelNamed("high"))
	if _, err := q.Enqueue(ctx, report); err != nil {
		panic(err)
	}
	_, err = q.Enqueue(ctx, report)
	fmt.Println(errors.Is(err, queue.ErrDuplicateTask))
	_, err = q.Enqueue(ctx, queue.NewTask("report", []byte(`{"day":"2026-11-29"}`), queue.Unique(time.Hour)))
	fmt.Println(err)
	// Output:
	// true
	// <nil>
}
