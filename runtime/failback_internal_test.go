package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A sentinel's hello names the master's config epoch last; anything else
// is no hello.
func TestHelloEpoch(t *testing.T) {
	n, ok := helloEpoch("127.0.0.1,26379,3a1b,4,overtake,127.0.0.1,6380,3")
	require.True(t, ok)
	require.EqualValues(t, 3, n)
	for _, bad := range []string{"", "1,2,3", "127.0.0.1,26379,3a1b,4,overtake,127.0.0.1,6380,x",
		"127.0.0.1,26379,3a1b,4,overtake,127.0.0.1,6380,-1"} {
		_, ok := helloEpoch(bad)
		require.False(t, ok, bad)
	}
}

// One series of checks at a time: a call while one runs pushes its
// deadline back instead of starting another, and the series ends at its
// deadline, when ctx ends, or when a check says checking cannot go on.
func TestSwitchChecksOneSeries(t *testing.T) {
	var s switchChecks
	var calls atomic.Int32
	release := make(chan struct{})
	check := func(context.Context) bool {
		if calls.Add(1) == 1 {
			<-release // the first check is under way while another series is asked for
		}
		return true
	}
	ctx := context.Background()
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); s.run(ctx, start.Add(50*time.Millisecond), 10*time.Millisecond, check) }()
	require.Eventually(t, func() bool { return calls.Load() == 1 }, time.Second, time.Millisecond)
	s.run(ctx, start.Add(300*time.Millisecond), 10*time.Millisecond, check) // returns at once: one runs
	close(release)
	<-done
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "the later deadline was not kept")

	calls.Store(1) // past the blocking first call
	s.run(ctx, time.Now().Add(time.Hour), time.Millisecond, func(context.Context) bool { return calls.Add(1) < 5 })
	require.EqualValues(t, 5, calls.Load(), "the series went on after a check said it cannot")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	calls.Store(0)
	s.run(cctx, time.Now().Add(time.Hour), time.Millisecond, check)
	require.EqualValues(t, 1, calls.Load(), "the series went on after ctx ended")
}
