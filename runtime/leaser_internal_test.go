package runtime

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A lease call ends on a caller goroutine that then takes the next call
// (idle accepts it), instead of a goroutine started per call; when
// leasing stops, the callers end and wait returns.
func TestLeaseCallerTakesTheNextCall(t *testing.T) {
	halt := make(chan struct{})
	r := newLeaseCallers(halt)
	first := make(chan struct{})
	r.call(func() { close(first) })
	<-first
	second := make(chan struct{})
	select {
	case r.idle <- func() { close(second) }:
	case <-time.After(5 * time.Second):
		t.Fatal("no idle caller took the next lease call")
	}
	<-second
	require.EqualValues(t, 1, r.count.Load(), "one caller for calls one after the other")
	close(halt)
	done := make(chan struct{})
	go func() { r.wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the caller did not end when leasing stopped")
	}
	require.Zero(t, r.count.Load())
}

// Callers started while others were busy end after their call once more
// than maxLeasesInFlight exist, so an idle runtime keeps at most that many.
func TestLeaseCallersBeyondTheLimitEnd(t *testing.T) {
	halt := make(chan struct{})
	r := newLeaseCallers(halt)
	const n = maxLeasesInFlight + 2
	var started sync.WaitGroup
	release := make(chan struct{})
	started.Add(n)
	for range n {
		r.call(func() { started.Done(); <-release })
	}
	started.Wait()
	require.EqualValues(t, n, r.count.Load(), "every busy call has a caller of its own")
	close(release)
	require.Eventually(t, func() bool { return r.count.Load() == maxLeasesInFlight },
		5*time.Second, time.Millisecond, "callers beyond the limit end")
	close(halt)
	r.wait()
	require.Zero(t, r.count.Load())
}

// A second lease call beside one in flight waits for half of the slots,
// so that calls stay large (a quarter made calls of 5 tasks at
// Concurrency 16, each costing Redis its fixed ~56 µs).
func TestSecondLeaseAtHalfTheSlots(t *testing.T) {
	d := &dispatcher{slots: &slots{}}
	for conc, want := range map[int64]int{1: 1, 2: 1, 3: 1, 16: 8, 64: 32} {
		d.slots.capacity.Store(conc)
		require.Equal(t, want, d.secondLeaseAt(), "Concurrency %d", conc)
	}
}

// Runs wait for their carried acks up to twice the slots (a lease call's
// answered runs still count until they wake, while the tasks it leased
// carry theirs), and never more than one lease call carries.
func TestEarlyRoomTwiceTheSlots(t *testing.T) {
	for _, c := range []struct{ conc, slots, early int64 }{{4, 4, 8}, {64, 64, 128}, {200, 200, maxCarried}} {
		d := &dispatcher{cfg: Config{Concurrency: int(c.conc)}, workers: &workers{}}
		d.workers.early.Store(c.slots)
		require.True(t, d.earlyRoom(int(c.slots)), "Concurrency %d: as many early acks as slots leave room", c.conc)
		d.workers.early.Store(c.early - 1)
		require.True(t, d.earlyRoom(int(c.slots)), "Concurrency %d", c.conc)
		d.workers.early.Store(c.early)
		require.False(t, d.earlyRoom(int(c.slots)), "Concurrency %d: %d early acks fill the room", c.conc, c.early)
		require.GreaterOrEqual(t, int64(d.cfg.earlyMax()), c.early, "the pool has a goroutine for each")
	}
}
