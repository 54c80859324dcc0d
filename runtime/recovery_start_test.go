package runtime_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// goodCall is a go-redis hook that tells, once armed, when a command of
// its client next succeeded: the worker's first good call after an
// outage.
type goodCall struct {
	mu    sync.Mutex
	armed chan time.Time // nil while disarmed
}

// arm returns a channel that receives the time of the next good call.
func (g *goodCall) arm() <-chan time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = make(chan time.Time, 1)
	return g.armed
}

func (*goodCall) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *goodCall) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil {
			g.fire()
		}
		return err
	}
}

func (g *goodCall) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err == nil {
			g.fire()
		}
		return err
	}
}

func (g *goodCall) fire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.armed != nil {
		g.armed <- time.Now()
		g.armed = nil
	}
}

// dispatcherBackoff is the longest backoff the dispatcher logged.
func dispatcherBackoff(logs *observer.ObservedLogs) time.Duration {
	var longest time.Duration
	for _, e := range logs.FilterMessage("redis unavailable; backing off").All() {
		if d, ok := e.ContextMap()["backoff"].(time.Duration); ok {
			longest = max(longest, d)
		}
	}
	return longest
}

// A task that ends during an outage holds its ack until the dispatcher's
// probe finds Redis again (its own tries would add go-redis's dial retries
// to the probe's one attempt), then the ack lands, and a task enqueued
// right after the worker's first good call starts within 1 s with a
// PollInterval of a minute, so only the wake-up path can start it: the end
// of the outage makes the dispatcher look for work and the subscription
// come back at once. Before, the ack retried on its own backoff during
// the outage.
func TestAckWaitsForProbeAfterOutage(t *testing.T) {
	g := setupProxied(t, "ack-wakes", testredis.ServerOptions{Persistent: true}, redis.Options{})
	log, logs := observedLogger(t)
	release := make(chan struct{})
	started := make(chan time.Time, 2)
	mux := handlers.NewMux()
	mux.HandleFunc("held", func(context.Context, *queue.TaskInfo) error {
		started <- time.Now()
		<-release // returns during the outage: its ack is retried
		return nil
	})
	mux.HandleFunc("job", func(context.Context, *queue.TaskInfo) error {
		started <- time.Now()
		return nil
	})
	startRuntime(t, g.worker, mux, runtime.Config{Concurrency: 2, PollInterval: time.Minute,
		MaxRedisBackoff: 10 * time.Second, Logger: log})
	held, err := g.producer.Enqueue(context.Background(), queue.NewTask("held", nil))
	require.NoError(t, err)
	receive(t, started, "the held task to start")

	require.NoError(t, g.srv.Stop()) // the proxy still accepts, and closes
	require.Eventually(t, func() bool { return dispatcherBackoff(logs) >= 1500*time.Millisecond },
		20*time.Second, 5*time.Millisecond, "the dispatcher's backoff never reached 1.5 s")
	close(release)
	waitForLog(t, logs, "the ack retried", func(e observer.LoggedEntry) bool {
		return e.Message == "redis unavailable; retrying ack"
	})
	first := g.good.arm()
	require.NoError(t, g.srv.Restart())
	receive(t, first, "a good call after the restart")

	enqueued := time.Now()
	_, err = g.producer.Enqueue(context.Background(), queue.NewTask("job", nil))
	require.NoError(t, err)
	select {
	case at := <-started:
		t.Logf("started %v after its Enqueue", at.Sub(enqueued))
	case <-time.After(time.Second):
		t.Fatal("the task enqueued after the outage ended waits for the slow poll")
	}
	require.Eventually(t, func() bool {
		tk, err := g.producer.Inspect(context.Background(), held.ID)
		return errors.Is(err, queue.ErrTaskNotFound) || (err == nil && tk.State == queue.StateDone)
	}, 10*time.Second, 5*time.Millisecond, "the ack held during the outage did not land")
	require.Equal(t, 1, logs.FilterMessage("redis unavailable; retrying ack").Len(),
		"the ack retried during the outage instead of waiting for the probe")
}

// trial makes one outage of length d (cut: the proxy closes every
// connection; else Redis is stopped and restarted on its port), enqueues a
// task right after the worker's first good call that follows it, and
// returns how long the task took to start after its Enqueue was called
// and after it returned.
func (g *proxiedBundle) trial(t *testing.T, d time.Duration, cut bool, started <-chan time.Time) (fromCall, fromReturn time.Duration) {
	if cut {
		g.proxy.setCut(true)
	} else {
		require.NoError(t, g.srv.Stop())
	}
	<-time.After(d) // the outage
	first := g.good.arm()
	if cut {
		g.proxy.setCut(false)
	} else {
		require.NoError(t, g.srv.Restart())
	}
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("no good call after the outage")
	}
	enqueued := time.Now()
	_, err := g.producer.Enqueue(context.Background(), queue.NewTask("job", nil))
	require.NoError(t, err)
	returned := time.Now()
	select {
	case at := <-started:
		return at.Sub(enqueued), at.Sub(returned)
	case <-time.After(90 * time.Second):
		t.Fatal("the task did not start")
		return 0, 0
	}
}

// TestRecoveryStartProbe measures, with OVERTAKE_RECOVERY_PROBE=1 (it
// takes minutes, and asserts nothing), how long a task enqueued right
// after a worker's first good call following an outage takes to start:
// trials (OVERTAKE_RECOVERY_TRIALS, default 30) of a 3 s outage each,
// Redis stopped and restarted on its port, and a cut link (connections
// accepted and closed), one worker with the default settings. It prints
// every trial and p50, p99 and max, from the Enqueue's call and from its
// return.
//
//	OVERTAKE_RECOVERY_PROBE=1 scripts/with-redis.sh go test -count=1 -v -run TestRecoveryStartProbe ./runtime
func TestRecoveryStartProbe(t *testing.T) {
	if os.Getenv("OVERTAKE_RECOVERY_PROBE") == "" {
		t.Skip("a measurement: set OVERTAKE_RECOVERY_PROBE=1")
	}
	trials := 30
	if n, err := strconv.Atoi(os.Getenv("OVERTAKE_RECOVERY_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	for _, cut := range []bool{false, true} {
		name := map[bool]string{false: "restart", true: "cut"}[cut]
		g := setupProxied(t, "recovery-probe-"+name, testredis.ServerOptions{}, redis.Options{})
		started := make(chan time.Time, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(context.Context, *queue.TaskInfo) error {
			started <- time.Now()
			return nil
		})
		startRuntime(t, g.worker, mux, runtime.Config{Concurrency: 4, Logger: zap.NewNop()})
		var fromCall, fromReturn []time.Duration
		for range trials {
			c, r := g.trial(t, 3*time.Second, cut, started)
			fromCall, fromReturn = append(fromCall, c.Round(10*time.Microsecond)), append(fromReturn, r.Round(10*time.Microsecond))
		}
		t.Logf("%s: from the Enqueue's call, every trial: %v", name, fromCall)
		for what, lat := range map[string][]time.Duration{"call": fromCall, "return": fromReturn} {
			slices.Sort(lat)
			t.Logf("%s, from the Enqueue's %s: p50 %v, p99 %v, max %v over %d trials", name, what,
				percentile(lat, 50), percentile(lat, 99), lat[len(lat)-1], len(lat))
		}
	}
}

// A subscription that cannot come back while commands get through (a
// proxy closes each connection that sends SUBSCRIBE) keeps its backoff:
// its failure begins an outage that the dispatcher's probe ends at once,
// and the subscription must not try again at every such end. A handful
// of connection attempts in seconds 1 to 3, not one per round trip.
func TestBlockedSubscriptionKeepsBackoff(t *testing.T) {
	g := setupProxied(t, "sub-blocked", testredis.ServerOptions{}, redis.Options{})
	startRuntime(t, g.worker, g.mux(), runtime.Config{Concurrency: 2})
	start := time.Now()
	g.proxy.blockSubscriptions(true)
	<-time.After(3 * time.Second) // the span whose attempts are counted
	from, end := start.Add(time.Second), time.Now()
	t.Logf("connection attempts in each second: %v", g.proxy.perSecond(start, end))
	require.LessOrEqual(t, g.proxy.acceptedBetween(from, end), 8, "the subscription retries without backing off")
}

// TestReachableStartProbe measures, with OVERTAKE_RECOVERY_PROBE=1 (it
// takes minutes, and asserts nothing), how long a task enqueued the moment
// Redis is reachable again takes to start: Redis stopped for 3 s and
// restarted on its port, the task enqueued as soon as the restarted
// server answers the producer (OVERTAKE_RECOVERY_OUTAGE sets the 3 s),
// trials (OVERTAKE_RECOVERY_TRIALS, default 30) with the default MaxRedisBackoff (2 s: at most one connection
// attempt a second) and with 100 ms (the start within about 100 ms, for
// about ten attempts a second). The wait is the worker's next probe:
// bounded by MaxRedisBackoff, whatever the wake-up path does.
//
//	OVERTAKE_RECOVERY_PROBE=1 scripts/with-redis.sh go test -count=1 -v -run TestReachableStartProbe ./runtime
func TestReachableStartProbe(t *testing.T) {
	if os.Getenv("OVERTAKE_RECOVERY_PROBE") == "" {
		t.Skip("a measurement: set OVERTAKE_RECOVERY_PROBE=1")
	}
	trials := 30
	if n, err := strconv.Atoi(os.Getenv("OVERTAKE_RECOVERY_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	outage := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv("OVERTAKE_RECOVERY_OUTAGE")); err == nil && d > 0 {
		outage = d
	}
	for _, limit := range []time.Duration{0, 100 * time.Millisecond} {
		g := setupProxied(t, "reachable-probe-"+limit.String(), testredis.ServerOptions{}, redis.Options{})
		started := make(chan time.Time, 1)
		mux := handlers.NewMux()
		mux.HandleFunc("job", func(context.Context, *queue.TaskInfo) error {
			started <- time.Now()
			return nil
		})
		startRuntime(t, g.worker, mux, runtime.Config{Concurrency: 4, MaxRedisBackoff: limit, Logger: zap.NewNop()})
		var lat []time.Duration
		for range trials {
			require.NoError(t, g.srv.Stop())
			<-time.After(outage)
			require.NoError(t, g.srv.Restart())
			enqueued := time.Now()
			_, err := g.producer.Enqueue(context.Background(), queue.NewTask("job", nil))
			require.NoError(t, err)
			select {
			case at := <-started:
				lat = append(lat, at.Sub(enqueued).Round(10*time.Microsecond))
			case <-time.After(30 * time.Second):
				t.Fatal("the task did not start")
			}
		}
		t.Logf("MaxRedisBackoff %v (0: default): every trial: %v", limit, lat)
		slices.Sort(lat)
		t.Logf("outage %v, MaxRedisBackoff %v: p50 %v, p99 %v, max %v over %d trials", outage, limit, percentile(lat, 50),
			percentile(lat, 99), lat[len(lat)-1], len(lat))
	}
}
