package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A lease call takes the carried acks, then appends the Ack group's queued
// items to what it took. That append must not write into the carried
// queue's backing array: the item queued there next would overwrite (or be
// overwritten by) an item the call carries, leaving one waiter unanswered
// until its 5 s timeout (seen as drain stalls and "retrying ack: context
// deadline exceeded" before take returned a clipped slice).
func TestGroupTakeDoesNotAliasQueue(t *testing.T) {
	var carried, acks groupCommit[int]
	for i := range 5 {
		carried.queue(i) // length 5, capacity 8: appends reuse the array
	}
	acks.queue(100)
	acks.queue(101)

	taken := carried.take(4) // one carried ack is left for the next call
	require.Len(t, taken, 4)
	taken = append(taken, acks.take(maxAckBatch-len(taken))...)
	later := carried.queue(5) // queued while the call is in flight

	items := make([]int, len(taken))
	for i, w := range taken {
		items[i] = w.item
	}
	require.Equal(t, []int{0, 1, 2, 3, 100, 101}, items, "the call carries what it took")
	left := make([]int, len(carried.queued))
	for i, w := range carried.queued {
		left[i] = w.item
	}
	require.Equal(t, []int{4, 5}, left, "the items left and queued later are untouched")
	require.Same(t, later, carried.queued[1])

	answer(taken, make([]error, len(taken)))
	for _, w := range taken {
		require.Len(t, w.done, 1, "every taken item is answered")
	}
	require.Empty(t, later.done, "the later item waits for the next call")
}

// gatedGroup is a group whose calls block until released, one gate per
// call in the order they went out, and report each call's items.
type gatedGroup struct {
	g     groupCommit[int]
	calls chan []int         // each call's items, as it goes out
	gates chan chan struct{} // each call's release, as it goes out
}

func newGatedGroup(flushers, minBatch int) *gatedGroup {
	gg := &gatedGroup{calls: make(chan []int, 16), gates: make(chan chan struct{}, 16)}
	gg.g.limit, gg.g.flushers, gg.g.minBatch = 256, flushers, minBatch
	gg.g.send = func(_ context.Context, items []int) []error {
		gate := make(chan struct{})
		gg.gates <- gate
		gg.calls <- items
		<-gate
		return make([]error, len(items))
	}
	return gg
}

// state reads the calls in flight and the items queued, under the lock.
func (gg *gatedGroup) state() (flushing, queued int) {
	gg.g.mu.Lock()
	defer gg.g.mu.Unlock()
	return gg.g.flushing, len(gg.g.queued)
}

// Beside a call in flight, a new call goes out only once minBatch items
// wait for it: a caller answered by one call and back at once no longer
// finds a free turn and goes alone (most calls carried one task), while a
// lone caller is still sent at once. A call that comes back to fewer than
// minBatch items leaves them to the last call in flight, which sends them.
func TestGroupCallBesideOthersWaitsForMinBatch(t *testing.T) {
	gg := newGatedGroup(4, 4)
	ctx := t.Context()
	errs := make(chan error, 16)
	do := func(item int) { go func() { errs <- gg.g.do(ctx, item) }() }

	do(0)
	require.Equal(t, []int{0}, <-gg.calls, "a lone caller goes at once")
	gateA := <-gg.gates
	for i := 1; i <= 3; i++ {
		do(i)
	}
	require.Eventually(t, func() bool { _, q := gg.state(); return q == 3 }, 5*time.Second, time.Millisecond)
	f, _ := gg.state()
	require.Equal(t, 1, f, "three waiting items start no second call")
	do(4)
	second := <-gg.calls
	require.ElementsMatch(t, []int{1, 2, 3, 4}, second, "the fourth starts a call with all four")
	gateB := <-gg.gates

	do(5)
	do(6)
	require.Eventually(t, func() bool { _, q := gg.state(); return q == 2 }, 5*time.Second, time.Millisecond)
	close(gateA) // comes back to two items, with another call in flight: leaves them
	require.NoError(t, <-errs)
	require.Eventually(t, func() bool { f, _ := gg.state(); return f == 1 }, 5*time.Second, time.Millisecond)
	_, q := gg.state()
	require.Equal(t, 2, q, "the two items wait for the last call in flight")
	require.Empty(t, gg.calls)

	close(gateB) // the last call in flight sends what is left
	require.ElementsMatch(t, []int{5, 6}, <-gg.calls)
	close(<-gg.gates)
	for range 6 {
		require.NoError(t, <-errs)
	}
	f, q = gg.state()
	require.Zero(t, f, "no call left in flight")
	require.Zero(t, q)
}

// Without minBatch (the Ack group) every caller that finds a free turn
// goes at once, as before.
func TestGroupWithoutMinBatchSendsAtOnce(t *testing.T) {
	gg := newGatedGroup(2, 0)
	ctx := t.Context()
	errs := make(chan error, 4)
	go func() { errs <- gg.g.do(ctx, 0) }()
	require.Equal(t, []int{0}, <-gg.calls)
	go func() { errs <- gg.g.do(ctx, 1) }()
	require.Equal(t, []int{1}, <-gg.calls, "a free turn is taken at once")
	close(<-gg.gates)
	close(<-gg.gates)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
}
