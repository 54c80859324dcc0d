package engine_test

import (
	"testing"

	"github.com/overtake/overtake/internal/testredis"

	"github.com/overtake/overtake/internal/engine"
	"github.com/overtake/overtake/queue"
)

// Of opens every queue.Client: the engine's method set matches Queue (a
// mismatch would panic here, not in a worker).
func TestOf(t *testing.T) {
	rdb := testredis.Mini(t).Client
	q, err := queue.New(rdb, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := engine.Of(q)
	if e.Redis() != rdb || e.WakeChannel() == "" {
		t.Fatalf("engine of q does not use q's Redis and keys: %v %q", e.Redis(), e.WakeChannel())
	}
}
