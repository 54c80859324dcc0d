package checkpoint_test

import (
	"context"
	"fmt"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/checkpoint/checkpointtest"
	"github.com/overtake/overtake/queue"
)

// rows is how many rows export writes.
const rows = 5

// exportRow writes one row; the example sets it.
var exportRow func(row int)

// The main flow of the package doc.

type rowProgress struct{ Row int }

func export(ctx context.Context, t *queue.TaskInfo) error {
	p, _, err := checkpoint.Load[rowProgress](ctx) // zero value on the first run
	if err != nil {
		return err
	}
	for ; p.Row < rows; p.Row++ {
		select {
		case <-ctx.Done(): // preempted or shutting down
			if err := checkpoint.Save(ctx, p); err != nil {
				return err
			}
			return context.Cause(ctx) // handlers.ErrPreempted or ErrShutdown
		default:
		}
		exportRow(p.Row)
	}
	return nil
}

// export is preempted after row 2 and resumes at row 3 in its next run.
func Example_export() {
	saver := &checkpointtest.Saver{}
	task := &queue.TaskInfo{ID: "export-1", Type: "export"}

	ctx, cancel := context.WithCancelCause(context.Background())
	exportRow = func(row int) {
		fmt.Println("row", row)
		if row == 2 {
			cancel(errPreempted) // the runtime preempts the run
		}
	}
	err := export(saver.Context(ctx, saver.Lease(task, "lease-1")), task)
	saved, _ := saver.Checkpoint(task.ID)
	fmt.Println(err, string(saved))

	err = export(saver.Context(context.Background(), saver.Lease(task, "lease-2")), task)
	fmt.Println(err)
	// Output:
	// row 0
	// row 1
	// row 2
	// preempted {"Row":3}
	// row 3
	// row 4
	// <nil>
}
