package main

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/queue"
)

// The producer on an in-process Redis: each email waits in the list of its
// level until a worker takes it, most urgent level first.
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
		{"bob@example.com", "low"}, {"ada@example.com", "high"}, {"cy@example.com", "high"},
	} {
		t, err := enqueue(ctx, q, e.to, e.level)
		if err != nil {
			panic(err)
		}
		fmt.Printf("enqueued %s for %s at level %d\n", t.Type, e.to, t.Level)
	}
	if _, err := enqueue(ctx, q, "dee@example.com", "urgent"); err != nil {
		fmt.Println(err)
	}
	st, err := q.Stats(ctx)
	if err != nil {
		panic(err)
	}
	for i := len(st.Levels) - 1; i >= 0; i-- {
		fmt.Printf("%s: %d pending\n", st.Levels[i].Name, st.Levels[i].Pending)
	}
	// Output:
	// enqueued welcome for bob@example.com at level 0
	// enqueued welcome for ada@example.com at level 2
	// enqueued welcome for cy@example.com at level 2
	// overtake: invalid priority level: no level named "urgent" (have [low normal high])
	// high: 2 pending
	// normal: 0 pending
	// low: 1 pending
}
