package queue

import (
	"testing"

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
