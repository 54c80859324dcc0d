package checkpoint_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/checkpoint/checkpointtest"
	"github.com/overtake/overtake/queue"
)

var errPreempted = errors.New("preempted") // handlers.ErrPreempted in a real worker

// sumTo adds 1..10, saving its progress when it is stopped.
func sumTo(ctx context.Context, stopAt int) (int, error) {
	type state struct{ Next, Sum int }
	s, resumed, err := checkpoint.Load[state](ctx)
	if err != nil {
		return 0, err
	}
	if !resumed {
		s.Next = 1
	}
	for ; s.Next <= 10; s.Next++ {
		if s.Next == stopAt {
			// The runtime cancels the context to preempt; Save still works.
			if err := checkpoint.Save(ctx, s); err != nil {
				return 0, err
			}
			return 0, context.Cause(ctx)
		}
		s.Sum += s.Next
	}
	return s.Sum, nil
}

func Example() {
	saver := &checkpointtest.Saver{} // *queue.Client in a real worker
	task := queue.NewTask("sum", nil)
	task.ID = "t1"

	// First run: preempted before adding 6.
	ctx, cancel := context.WithCancelCause(context.Background())
	h := checkpoint.New(saver, saver.Lease(task, "lease-1"))
	cancel(errPreempted)
	_, err := sumTo(checkpoint.NewContext(ctx, h), 6)
	fmt.Println("run 1:", err, "- saved", string(h.Bytes()))

	// Second run, under a new lease: resumes where it stopped.
	h2 := checkpoint.New(saver, saver.Lease(task, "lease-2"))
	sum, err := sumTo(checkpoint.NewContext(context.Background(), h2), 0)
	fmt.Println("run 2: resumed", h2.Resumed(), "sum", sum, err)

	// The first run's lease is gone: it can no longer overwrite the state.
	err = h.Save(context.Background(), []byte("stale"))
	fmt.Println(errors.Is(err, queue.ErrLeaseLost))
	// Output:
	// run 1: preempted - saved {"Next":6,"Sum":15}
	// run 2: resumed true sum 55 <nil>
	// true
}

func ExampleCursor() {
	saver := &checkpointtest.Saver{}
	task := saver.Lease(&queue.Task{ID: "t2", Type: "scan"}, "lease-1")
	h := checkpoint.New(saver, task)
	ctx := checkpoint.NewContext(context.Background(), h)

	cur, _ := checkpoint.NewCursor[string](ctx, 0) // save on every Set
	for _, key := range []string{"a", "b", "c"} {
		_ = cur.Set(ctx, key)
	}
	fmt.Println(cur.Value(), h.SaveCount(), h.Seq())
	// Output:
	// c 3 3
}

func ExampleWithMaxBytes() {
	saver := &checkpointtest.Saver{}
	task := saver.Lease(&queue.Task{ID: "t3", Type: "big"}, "lease-1")
	h := checkpoint.New(saver, task, checkpoint.WithMaxBytes(8))

	err := h.Save(context.Background(), make([]byte, 20))
	fmt.Println(errors.Is(err, queue.ErrCheckpointTooLarge))
	fmt.Println(err)
	// Output:
	// true
	// checkpoint: task t3: 20 bytes exceed the limit of 8: overtake: checkpoint too large
}
