package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFlushPoolSharesTurns: two groups (the Enqueue groups of two shards)
// share a pool of one turn. While group a's call is in flight, group b's
// caller finds no turn and queues, as do three more of b's; when a's call
// ends, its turn goes to b, whose one call carries all four. At no time
// are two calls in flight.
func TestFlushPoolSharesTurns(t *testing.T) {
	a, b := newGatedGroup(4, 4), newGatedGroup(4, 4)
	pool := newFlushPool(1)
	joinPool(pool, &a.g)
	joinPool(pool, &b.g)
	ctx := t.Context()
	errs := make(chan error, 8)

	go func() { errs <- a.g.do(ctx, 1) }()
	require.Equal(t, []int{1}, a.call(t))
	gateA := <-a.gates
	for i := range 4 {
		go func() { errs <- b.g.do(ctx, 10+i) }()
	}
	require.Eventually(t, func() bool { _, q := b.state(); return q == 4 }, 5*time.Second, time.Millisecond)
	flushing, _ := b.state()
	require.Zero(t, flushing, "no turn: b's callers wait")
	require.Empty(t, b.calls)

	close(gateA) // a's call ends: its turn goes to b's queued items
	require.NoError(t, <-errs)
	require.ElementsMatch(t, []int{10, 11, 12, 13}, b.call(t), "one call carries what piled up")
	close(<-b.gates)
	for range 4 {
		require.NoError(t, <-errs)
	}
	require.Eventually(t, func() bool { return len(pool.turns) == 1 }, 5*time.Second, time.Millisecond,
		"the turn is back")
	fa, _ := a.state()
	fb, _ := b.state()
	require.Zero(t, fa+fb)
}

// TestFlushPoolGivesToTheFullest: with one turn, the turn a call returns
// goes to the group with the most items waiting.
func TestFlushPoolGivesToTheFullest(t *testing.T) {
	a, b, c := newGatedGroup(4, 4), newGatedGroup(4, 4), newGatedGroup(4, 4)
	pool := newFlushPool(1)
	for _, g := range []*gatedGroup{a, b, c} {
		joinPool(pool, &g.g)
	}
	ctx := t.Context()
	errs := make(chan error, 8)
	go func() { errs <- a.g.do(ctx, 1) }()
	require.Equal(t, []int{1}, a.call(t))
	gateA := <-a.gates
	go func() { errs <- b.g.do(ctx, 2) }()
	for i := range 3 {
		go func() { errs <- c.g.do(ctx, 3+i) }()
	}
	require.Eventually(t, func() bool {
		_, qb := b.state()
		_, qc := c.state()
		return qb == 1 && qc == 3
	}, 5*time.Second, time.Millisecond)
	close(gateA)
	require.ElementsMatch(t, []int{3, 4, 5}, c.call(t), "c has the most waiting")
	close(<-c.gates)
	require.Equal(t, []int{2}, b.call(t), "then b")
	close(<-b.gates)
	for range 5 {
		require.NoError(t, <-errs)
	}
}
