package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A lone call through the group allocates its call's two slices (the
// batch taken from the queue and the items sent) and nothing per waiter:
// the wait and its channel are recycled once answered, and the queue
// keeps its array. It cost 5 before (a wait, a channel, and the queue's
// array grown again as taking from its front left no room).
func TestGroupRecyclesAnsweredWaits(t *testing.T) {
	errs := make([]error, 256)
	g := groupCommit[int]{limit: 256, send: func(_ context.Context, items []int) []error { return errs[:len(items)] }}
	ctx := context.Background()
	require.NoError(t, g.do(ctx, 0)) // the first wait is made
	n := testing.AllocsPerRun(500, func() {
		if err := g.do(ctx, 1); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%v allocations per call", n)
	require.LessOrEqual(t, n, 2.0+raceAllocs)
}

// A caller whose context ends before its answer leaves its wait to the
// call in flight, which answers it later: were that wait recycled, the
// next caller would read the stale answer as its own.
func TestGroupCancelledWaitIsNotRecycled(t *testing.T) {
	gg := newGatedGroup(1, 1)
	stale := errors.New("the cancelled caller's answer")
	send := gg.g.send
	gg.g.send = func(ctx context.Context, items []int) []error {
		errs := send(ctx, items)
		for i, it := range items {
			if it == 2 {
				errs[i] = stale
			}
		}
		return errs
	}
	led := make(chan error, 1)
	go func() { led <- gg.g.do(context.Background(), 1) }() // leads; its call stalls
	require.Equal(t, []int{1}, gg.call(t))
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { gone <- gg.g.do(ctx, 2) }() // queued behind the call
	require.Eventually(t, func() bool { _, q := gg.state(); return q == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-gone, context.Canceled)
	close(<-gg.gates)
	require.NoError(t, <-led)
	require.Equal(t, []int{2}, gg.call(t), "the cancelled caller's item still goes")
	close(<-gg.gates) // and its wait is answered, with no one to read it

	next := make(chan error, 1)
	go func() { next <- gg.g.do(context.Background(), 3) }()
	require.Equal(t, []int{3}, gg.call(t))
	close(<-gg.gates)
	require.NoError(t, <-next, "the next caller gets its own answer")
}
