package handlers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/checkpoint/checkpointtest"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

// SetResult stores under the run's lease: the latest write wins, a stale
// run's write is refused, an oversized one stores nothing, and outside a
// handler there is nothing to store to.
func TestSetResult(t *testing.T) {
	t.Parallel()
	s := &checkpointtest.Saver{MaxResultBytes: 8}
	first := s.Lease(&queue.TaskInfo{ID: "r", Type: "report"}, "lease-1")
	stale := s.Context(context.Background(), first)
	require.NoError(t, handlers.SetResult(stale, []byte("one")))
	require.NoError(t, handlers.SetResult(stale, []byte("two")))
	require.Equal(t, []byte("two"), s.Result("r"))

	fresh := s.Context(context.Background(), s.Lease(first, "lease-2")) // recovered elsewhere
	err := handlers.SetResult(stale, []byte("stale"))
	require.ErrorIs(t, err, queue.ErrLeaseLost)
	require.EqualError(t, err, "result: save task r: overtake: lease lost")
	require.NoError(t, handlers.SetResult(fresh, []byte("three")))

	err = handlers.SetResult(fresh, []byte("too large"))
	require.ErrorIs(t, err, queue.ErrResultTooLarge)
	require.Equal(t, []byte("three"), s.Result("r"), "an oversized result changes nothing")

	canceled, cancel := context.WithCancel(fresh)
	cancel()
	require.NoError(t, handlers.SetResult(canceled, []byte("four")), "works after cancellation, like checkpoint.Save")
	require.Equal(t, []byte("four"), s.Result("r"))

	require.ErrorIs(t, handlers.SetResult(context.Background(), []byte("x")), handlers.ErrNoRunningTask)
}

// A handler test reads the result back from the Saver.
func ExampleSetResult() {
	count := func(ctx context.Context, t *queue.TaskInfo) error {
		return handlers.SetResult(ctx, fmt.Appendf(nil, "%d bytes", len(t.Payload)))
	}

	var s checkpointtest.Saver
	task := s.Lease(&queue.TaskInfo{ID: "t1", Type: "count", Payload: []byte("hello")}, "lease-1")
	fmt.Println(count(s.Context(context.Background(), task), task))
	fmt.Println(string(s.Result("t1")))
	// Output:
	// <nil>
	// 5 bytes
}
