package store

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
	gg.g.shareWait = time.Hour // the share is waited for; TestGroupSlowCallHoldsNoOneLong sets its own
	gg.g.send = func(_ context.Context, items []int) []error {
		gate := make(chan struct{})
		gg.gates <- gate
		gg.calls <- items
		<-gate
		return make([]error, len(items))
	}
	return gg
}

// call returns the items of the next call to go out, failing the test if
// none does within 5 s.
func (gg *gatedGroup) call(t *testing.T) []int {
	t.Helper()
	select {
	case items := <-gg.calls:
		return items
	case <-time.After(5 * time.Second):
		t.Fatal("no call went out")
		return nil
	}
}

// state reads the calls in flight and the items queued, under the lock.
func (gg *gatedGroup) state() (flushing, queued int) {
	gg.g.mu.Lock()
	defer gg.g.mu.Unlock()
	return gg.g.flushing, len(gg.g.queued)
}

// stallEight brings gg (2 turns, a share of at most 4, do sending its
// items) to one call in flight that holds items 2..9 and stalls until its
// gate (returned) closes: items 0 and 1 go alone, 2..9 queue behind them
// and go together once 0's call returns. Nothing else is in flight then.
func (gg *gatedGroup) stallEight(t *testing.T, do func(int)) (stalled chan struct{}) {
	t.Helper()
	do(0)
	require.Equal(t, []int{0}, gg.call(t))
	gateA := <-gg.gates
	do(1) // two outstanding: goes at once
	require.Equal(t, []int{1}, gg.call(t))
	gateB := <-gg.gates
	for i := 2; i < 10; i++ {
		do(i)
	}
	gg.queuedN(t, 8)
	close(gateA)
	require.ElementsMatch(t, []int{2, 3, 4, 5, 6, 7, 8, 9}, gg.call(t))
	stalled = <-gg.gates // held until the caller closes it
	close(gateB)
	require.Eventually(t, func() bool { f, _ := gg.state(); return f == 1 }, 5*time.Second, time.Millisecond)
	return stalled
}

// queuedN waits until n items are queued.
func (gg *gatedGroup) queuedN(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { _, q := gg.state(); return q == n }, 5*time.Second, time.Millisecond)
}

// settled reads n callers' answers, each nil, and waits until nothing is
// left in flight or queued: a flusher answers its callers before it gives
// its turn back, so the last answer can come a moment before that.
func (gg *gatedGroup) settled(t *testing.T, errs <-chan error, n int) {
	t.Helper()
	for range n {
		require.NoError(t, <-errs)
	}
	require.Eventually(t, func() bool {
		gg.g.mu.Lock()
		defer gg.g.mu.Unlock()
		return gg.g.flushing == 0 && len(gg.g.queued) == 0 && gg.g.inCalls == 0
	}, 5*time.Second, time.Millisecond, "a call left in flight or an item queued")
}

// A few callers go side by side, one item each, as they would alone: the
// share of items a call beside others waits for is 1 while few are
// outstanding.
func TestGroupFewCallersGoAtOnce(t *testing.T) {
	gg := newGatedGroup(4, 4)
	ctx := t.Context()
	errs := make(chan error, 4)
	for i := range 3 {
		go func() { errs <- gg.g.do(ctx, i) }()
		require.Len(t, gg.call(t), 1, "caller %d goes at once", i)
	}
	for range 3 {
		close(<-gg.gates)
		require.NoError(t, <-errs)
	}
}

// With many callers outstanding, a call beside others goes out only once
// its share of them waits (at most minBatch): a caller answered by one call
// and back at once no longer finds a free turn and goes alone (with 16
// producers most calls carried one task). A call that comes back to fewer
// leaves them to the others in flight; the last one sends what is left.
func TestGroupCallBesideOthersWaitsForItsShare(t *testing.T) {
	gg := newGatedGroup(3, 4)
	ctx := t.Context()
	errs := make(chan error, 32)
	do := func(item int) { go func() { errs <- gg.g.do(ctx, item) }() }
	queuedIs := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { _, q := gg.state(); return q == n }, 5*time.Second, time.Millisecond)
	}

	var gates []chan struct{}
	for i := range 3 { // few outstanding: each goes at once
		do(i)
		require.Equal(t, []int{i}, gg.call(t))
		gates = append(gates, <-gg.gates)
	}
	for i := 3; i < 12; i++ { // no free turn: they queue
		do(i)
	}
	queuedIs(9)
	close(gates[0]) // comes back to 9 waiting (share 4): sends them all
	require.ElementsMatch(t, []int{3, 4, 5, 6, 7, 8, 9, 10, 11}, gg.call(t))
	gates = append(gates, <-gg.gates)

	for i := 12; i < 15; i++ {
		do(i)
	}
	queuedIs(3)
	close(gates[1]) // comes back to 3 waiting of 13 outstanding (share 4): leaves them
	require.Eventually(t, func() bool { f, _ := gg.state(); return f == 2 }, 5*time.Second, time.Millisecond)
	_, q := gg.state()
	require.Equal(t, 3, q, "three items wait for their share")
	require.Empty(t, gg.calls, "no call carries fewer than the share beside others")

	do(15) // the fourth fills the share and takes the free turn
	require.ElementsMatch(t, []int{12, 13, 14, 15}, gg.call(t))
	gates = append(gates, <-gg.gates)

	do(16)
	queuedIs(1)
	close(gates[2])
	close(gates[3]) // two calls come back: one item is not their share
	require.Eventually(t, func() bool { f, _ := gg.state(); return f == 1 }, 5*time.Second, time.Millisecond)
	require.Empty(t, gg.calls)
	close(gates[4]) // the last call in flight sends what is left
	require.Equal(t, []int{16}, gg.call(t))
	close(<-gg.gates)
	gg.settled(t, errs, 17)
}

// A call in flight that stalls holds an item waiting for its share at
// most shareWait: with a turn free, its caller then sends it, as a lone
// call would have gone, rather than wait out the stalled call (up to
// groupTimeout, 5 s).
func TestGroupSlowCallHoldsNoOneLong(t *testing.T) {
	gg := newGatedGroup(2, 4)
	gg.g.shareWait = 10 * time.Millisecond
	ctx := t.Context()
	errs := make(chan error, 16)
	do := func(item int) { go func() { errs <- gg.g.do(ctx, item) }() }

	stalled := gg.stallEight(t, do) // held until the end: 8 items in a stalled call

	do(10) // 9 outstanding, share 4: it waits, but only shareWait
	require.Equal(t, []int{10}, gg.call(t), "sent beside the stalled call")
	close(<-gg.gates)
	close(stalled)
	gg.settled(t, errs, 11)
}

// The share watch that ends while every call turn is taken watches
// again: a call that then comes back leaves the waiting item to the other
// call in flight (its share is not reached), and the next watch sends it
// on the freed turn rather than leave it behind a stalled call.
func TestGroupShareWatchesAgain(t *testing.T) {
	gg := newGatedGroup(2, 4)
	ctx := t.Context()
	errs := make(chan error, 32)
	do := func(item int) { go func() { errs <- gg.g.do(ctx, item) }() }

	stalledA := gg.stallEight(t, do) // 8 items, held until the end
	for i := 10; i < 13; i++ {
		do(i) // each waits for its share of 4
		gg.queuedN(t, i-9)
	}
	do(13) // the fourth reaches it and goes
	require.ElementsMatch(t, []int{10, 11, 12, 13}, gg.call(t))
	stalledB := <-gg.gates
	do(14) // both turns taken: it waits, and arms the watch (an hour)
	gg.queuedN(t, 1)

	gg.g.mu.Lock()
	gg.g.shareWait = 10 * time.Millisecond
	gg.g.mu.Unlock()
	gg.g.rescueShare() // the watch ends: no turn is free, so it watches again (10 ms)
	close(stalledB)    // B comes back: 1 queued, a share of 4, and A in flight: B leaves it
	require.Equal(t, []int{14}, gg.call(t), "the next watch sends it on B's freed turn")
	close(<-gg.gates)
	close(stalledA)
	gg.settled(t, errs, 15)
}

// Without minBatch (the Ack group) every caller that finds a free turn
// goes at once, as before.
func TestGroupWithoutMinBatchSendsAtOnce(t *testing.T) {
	gg := newGatedGroup(2, 0)
	ctx := t.Context()
	errs := make(chan error, 4)
	go func() { errs <- gg.g.do(ctx, 0) }()
	require.Equal(t, []int{0}, gg.call(t))
	go func() { errs <- gg.g.do(ctx, 1) }()
	require.Equal(t, []int{1}, gg.call(t), "a free turn is taken at once")
	close(<-gg.gates)
	close(<-gg.gates)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
}

// A call beside others waits for its share of the callers outstanding
// lately, not only of those queued or in calls at the moment: callers a
// call just answered come back with their next item, and one that finds a
// call in flight waits for them rather than go alone. Only the call in
// flight holds it: that call sends it when it comes back. The memory fades
// an eighth a call, so that a few callers go side by side again.
func TestGroupShareCountsRecentCallers(t *testing.T) {
	gg := newGatedGroup(2, 8)
	ctx := t.Context()
	errs := make(chan error, 64)
	do := func(item int) { go func() { errs <- gg.g.do(ctx, item) }() }

	stalled := gg.stallEight(t, do) // 10 were outstanding
	close(stalled)
	gg.settled(t, errs, 10)

	do(10) // nothing in flight: it goes at once
	require.Equal(t, []int{10}, gg.call(t))
	gate := <-gg.gates
	do(11) // two outstanding, but 10 lately (faded to 7 by two calls): a share of 4, so it waits
	gg.queuedN(t, 1)
	require.Empty(t, gg.calls, "an item beside a call waits for the callers of late")
	close(gate) // the call in flight comes back and sends it
	require.Equal(t, []int{11}, gg.call(t))
	close(<-gg.gates)
	gg.settled(t, errs, 2)

	for i := range 32 { // lone calls, one after another: the memory fades
		do(100 + i)
		require.Equal(t, []int{100 + i}, gg.call(t))
		close(<-gg.gates)
		require.NoError(t, <-errs)
	}
	do(200)
	require.Equal(t, []int{200}, gg.call(t))
	gate = <-gg.gates
	do(201) // two outstanding, and no more lately: side by side again
	require.Equal(t, []int{201}, gg.call(t), "few callers go at once once the burst is forgotten")
	close(<-gg.gates)
	close(gate)
	gg.settled(t, errs, 2)
}
