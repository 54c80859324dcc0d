package ckpt_test

import (
	"github.com/overtake/overtake/internal/ckpt"

	"github.com/overtake/overtake/internal/store"

	"testing"

	"go.uber.org/goleak"

	"github.com/overtake/overtake/checkpoint/checkpointtest"
	"github.com/overtake/overtake/queue"
)

// The engine of a queue.Client is the Saver the runtime uses.
var _ ckpt.Saver = (*store.Store)(nil)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// setup returns a fencing in-memory Saver and a task leased from it under
// token "lease-1".
func setup(t *testing.T) (*checkpointtest.Saver, *queue.TaskInfo) {
	t.Helper()
	s := &checkpointtest.Saver{}
	task := &queue.TaskInfo{ID: "task-" + t.Name(), Type: "export"}
	return s, s.Lease(task, "lease-1")
}
