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
func sumTo(ctx context.Context, stopAt int) (sum int, resumed bool, err error) {
	type state struct{ Next, Sum int }
	s, resumed, err := checkpoint.Load[state](ctx)
	if err != nil {
		return 0, false, err
	}
	if !resumed {
		s.Next = 1
	}
	for ; s.Next <= 10; s.Next++ {
		if s.Next == stopAt {
			// The runtime cancels the context to preempt; Save still works.
			if err := checkpoint.Save(ctx, s); err != nil {
				return 0, resumed, err
			}
			return 0, resumed, context.Cause(ctx)
		}
		s.Sum += s.Next
	}
	return s.Sum, resumed, nil
}

// A handler preempted half-way resumes from its checkpoint under its next
// lease. checkpointtest.Saver stands in for the queue, as in a handler's
// unit test.
func Example() {
	saver := &checkpointtest.Saver{}
	task := &queue.TaskInfo{ID: "t1", Type: "sum"}

	// First run: preempted before adding 6.
	ctx, cancel := context.WithCancelCause(context.Background())
	run1 := saver.Lease(task, "lease-1")
	cancel(errPreempted)
	_, _, err := sumTo(saver.Context(ctx, run1), 6)
	saved, _ := saver.Checkpoint(task.ID)
	fmt.Println("run 1:", err, "- saved", string(saved))

	// Second run, under a new lease: resumes where it stopped.
	run2 := saver.Lease(task, "lease-2")
	sum, resumed, err := sumTo(saver.Context(context.Background(), run2), 0)
	fmt.Println("run 2: resumed", resumed, "sum", sum, err)

	// The first run's lease is gone: it can no longer overwrite the state.
	err = checkpoint.Save(saver.Context(context.Background(), run1), "stale")
	fmt.Println(errors.Is(err, queue.ErrLeaseLost))
	// Output:
	// run 1: preempted - saved {"Next":6,"Sum":15}
	// run 2: resumed true sum 55 <nil>
	// true
}

func ExampleCursor() {
	saver := &checkpointtest.Saver{}
	task := saver.Lease(&queue.TaskInfo{ID: "t2", Type: "scan"}, "lease-1")
	ctx := saver.Context(context.Background(), task)

	cur, _ := checkpoint.NewCursor[string](ctx, 0) // save on every Set
	for _, key := range []string{"a", "b", "c"} {
		_ = cur.Set(ctx, key)
	}
	saved, seq := saver.Checkpoint(task.ID)
	fmt.Println(cur.Value(), string(saved), seq)
	// Output:
	// c "c" 3
}

// A checkpoint over the queue's MaxCheckpointBytes is refused and changes
// nothing.
func ExampleSave_tooLarge() {
	saver := &checkpointtest.Saver{MaxBytes: 8}
	task := saver.Lease(&queue.TaskInfo{ID: "t3", Type: "big"}, "lease-1")

	err := checkpoint.Save(saver.Context(context.Background(), task), make([]int, 20))
	fmt.Println(errors.Is(err, queue.ErrCheckpointTooLarge))
	fmt.Println(err)
	// Output:
	// true
	// checkpoint: save task t3: 41 bytes: overtake: checkpoint too large
}
