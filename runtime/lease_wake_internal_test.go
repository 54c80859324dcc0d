package runtime

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// IsLeaseCall reports whether cmd is a lease call: an EVALSHA or EVAL of
// the lease script, on the leases key, whose ARGV[8] is its JSON options
// (see lease.lua's header). Exported for the tests of package runtime_test.
func IsLeaseCall(cmd redis.Cmder) bool {
	_, ok := leaseCallOptions(cmd)
	return ok
}

// leaseCallOptions returns the JSON options (ARGV[8]) of a lease call
// (IsLeaseCall).
func leaseCallOptions(cmd redis.Cmder) (string, bool) {
	if cmd.Name() != "evalsha" && cmd.Name() != "eval" {
		return "", false
	}
	a := cmd.Args() // evalsha, sha, numkeys, KEYS..., ARGV...
	if len(a) < 4 {
		return "", false
	}
	numKeys, _ := a[2].(int)
	key, _ := a[3].(string)
	if numKeys < 1 || len(a) < 3+numKeys+8 || !strings.HasSuffix(key, "}:leases") {
		return "", false
	}
	var opts string
	switch v := a[3+numKeys+7].(type) {
	case string:
		opts = v
	case []byte:
		opts = string(v)
	}
	return opts, strings.HasPrefix(opts, "{")
}

// leaseHold holds the reply of the next lease call once armed, until
// release; held is closed once that call has run in Redis. reserves counts
// the reservation calls (a lease call with reserve options: a
// preemption's start), which it never holds.
type leaseHold struct {
	armed         *atomic.Bool
	held, release chan struct{}
	reserves      *atomic.Int32
}

// newLeaseHold returns a leaseHold, armed or not.
func newLeaseHold(armed bool) leaseHold {
	h := leaseHold{armed: &atomic.Bool{}, held: make(chan struct{}), release: make(chan struct{}),
		reserves: &atomic.Int32{}}
	h.armed.Store(armed)
	return h
}

func (h leaseHold) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h leaseHold) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h leaseHold) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		opts, ok := leaseCallOptions(cmd)
		switch {
		case !ok:
		case strings.Contains(opts, `"reserve":`):
			h.reserves.Add(1)
		case h.armed.CompareAndSwap(true, false):
			close(h.held)
			<-h.release
		}
		return err
	}
}

// A task announced while a lease call is in flight is leased once that
// call ends, although the call ran before the task arrived and found the
// queue empty: the wake-up the dispatcher took meanwhile is not lost (the
// poll is a minute away here). A guard of the rule behind wokeSince in
// dispatch: before it, a call that found the queue drained kept the
// dispatcher from asking again until the next wake-up, and two tests
// stalled once under load (a retried task, and the demo's resumed one).
// Here other signals of the run (the first heartbeat) may still mask that
// older bug, so this test does not reproduce it every time.
func TestWakeDuringLeaseInFlight(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	rdb := srv.NewClient(t)
	hook := newLeaseHold(true)
	rdb.AddHook(hook)
	q, err := queue.New(rdb, queue.Config{Name: "wake-in-flight"})
	require.NoError(t, err)
	started := make(chan struct{}, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(context.Context, *queue.TaskInfo) error {
		started <- struct{}{}
		return nil
	})
	rt, err := New(q, mux, Config{Concurrency: 2, PollInterval: time.Minute})
	require.NoError(t, err)
	woke := make(chan struct{}, 4)
	rt.wakes.onWake = func() { woke <- struct{}{} }
	ctx := context.Background()
	startForTest(t, rt)

	within(t, hook.held, "no lease call") // the first ran on an empty queue; its reply is held
	_, err = q.Enqueue(ctx, queue.NewTask("job", nil))
	require.NoError(t, err)
	within(t, woke, "the wake-up message did not arrive")
	// The dispatcher takes the signal while the call is in flight (every
	// slot is asked for by that call, so it sends none).
	require.Eventually(t, func() bool { return len(rt.dispatch.inbox.kick) == 0 }, 10*time.Second, time.Millisecond)
	close(hook.release)
	within(t, started, "the task announced during the lease call was not leased when it ended")
}

// startForTest starts rt and shuts it down when the test ends.
func startForTest(t *testing.T, rt *Runtime) {
	t.Helper()
	require.NoError(t, rt.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
}

// within returns what ch gives, failing the test with what after 10 s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal(what)
		panic("unreachable")
	}
}
