package main

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/queue"
)

// A hundred paying reports, then three free ones, arrive together. With one pool
// for all four slots, the paying backlog would take every slot until it is
// gone; with a pool per band, the free reports run beside it, one at a
// time in their own slot, while paying work keeps its three.
func Example() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	finished := make(chan string, 128)
	reps := &Reports{Work: 20 * time.Millisecond, Finished: finished}
	q, rt, err := newWorker(rdb, reps, runtimeConfig(3, 1, time.Minute), time.Hour)
	if err != nil {
		panic(err)
	}
	for i := range 103 {
		class := "paying"
		if i >= 100 {
			class = "free"
		}
		if _, err := q.Enqueue(ctx, queue.NewTask(TypeReport, nil), queue.Class(class)); err != nil {
			panic(err)
		}
	}
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	// The free reports finish while paying ones still wait.
	timeout := time.After(10 * time.Second)
	for free := 0; free < 3; {
		select {
		case class := <-finished:
			if class == "free" {
				free++
			}
		case <-timeout:
			panic("the free reports did not finish")
		}
	}
	st, err := q.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("free reports done while paying ones waited:", st.Levels[1].Pending > 0)
	if err := rt.Shutdown(ctx); err != nil {
		panic(err)
	}
	for _, class := range []string{"paying", "free"} {
		_, most := reps.Done(class)
		fmt.Printf("%s: at most %d at once\n", class, most)
	}
	for _, p := range rt.PoolStats() {
		fmt.Printf("pool %s: levels %v, size %d\n", p.Name, p.Levels, p.Size)
	}
	// Output:
	// free reports done while paying ones waited: true
	// paying: at most 3 at once
	// free: at most 1 at once
	// pool paying: levels [1], size 3
	// pool free: levels [0], size 1
}
