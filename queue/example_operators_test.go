package queue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/overtake/overtake/queue"
)

// An operator's tool finds the queues of a namespace, opens one with the
// shape Redis holds (without knowing its levels), and reads a task with
// its lease: which worker holds it and until when. Worker is "" here, as
// no worker leased the task; the console's running page lists the leased
// ones with RunningDetails.
func Example_operators() {
	rdb, stop := newRedis()
	defer stop()
	ctx := context.Background()
	producer, err := queue.New(rdb, queue.Config{Namespace: "shop", Name: "mail", Levels: 2})
	if err != nil {
		panic(err)
	}
	if _, err := producer.Enqueue(ctx, queue.NewTask("email", nil), queue.Level(1), queue.ID("m-1")); err != nil {
		panic(err)
	}

	names, err := queue.Queues(ctx, rdb, "shop")
	if err != nil {
		panic(err)
	}
	fmt.Println(names)
	shape, err := queue.ReadShape(ctx, rdb, "shop", "mail")
	if err != nil {
		panic(err)
	}
	q, err := queue.New(rdb, shape.Apply(queue.Config{Namespace: "shop", Name: "mail"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(q.Levels(), shape.LevelNames)
	t, err := q.InspectDetail(ctx, "m-1")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %s worker=%q leased until zero: %t\n", t.ID, t.State, t.Worker, t.LeaseDeadline.IsZero())
	running, total, err := q.RunningDetails(ctx, 0, 100)
	fmt.Println(len(running), total, err)

	_, err = queue.ReadShape(ctx, rdb, "shop", "nope")
	fmt.Println(errors.Is(err, queue.ErrNoQueue))
	inUse, err := queue.InUse(ctx, rdb, "shop", "mail")
	fmt.Println(inUse, err)
	// Output:
	// [mail]
	// 2 [0 1]
	// m-1 pending worker="" leased until zero: true
	// 0 0 <nil>
	// true
	// true <nil>
}
