package runtime_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// leaseCounter counts the lease calls (EVALSHA or EVAL with the lease
// script's 20 arguments or more) that succeeded, and those in flight.
type leaseCounter struct {
	mu       sync.Mutex
	ok       int
	inFlight int
	last     time.Time // when the last one ended
}

func (*leaseCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (*leaseCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *leaseCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !runtime.IsLeaseCall(cmd) {
			return next(ctx, cmd)
		}
		c.mu.Lock()
		c.inFlight++
		c.mu.Unlock()
		err := next(ctx, cmd)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.inFlight--
		c.last = time.Now()
		if err == nil {
			c.ok++
		}
		return err
	}
}

// quiet reports whether a lease call succeeded and none was sent for d.
func (c *leaseCounter) quiet(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ok > 0 && c.inFlight == 0 && time.Since(c.last) >= d
}

func (c *leaseCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ok
}

// While Redis is unreachable behind a port that still accepts connections,
// a worker with the default settings and go-redis's default retries makes
// at most one connection attempt a second from the fourth second of the
// outage on, all its connections together (lease calls, heartbeats, the
// wake-up subscription), and logs no more often; with a heartbeat and a
// poll every 500 ms too. Before, the dispatcher's backoff was reset in the
// round that sent a lease call and stayed at 10 ms, and the subscription
// reconnected every 100 ms: 12 to 22 attempts a second. Afterwards the
// worker runs a task again.
func TestOutageConnectionRate(t *testing.T) {
	for name, cfg := range map[string]runtime.Config{
		"defaults":  {Concurrency: 4},
		"beat500ms": {Concurrency: 4, HeartbeatInterval: 500 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := setupProxied(t, "outage-rate-"+name, testredis.ServerOptions{}, redis.Options{})
			log, logs := observedLogger(t)
			cfg.Logger = log
			startRuntime(t, g.worker, g.mux(), cfg)

			const outage = 8 * time.Second
			start := time.Now()
			g.proxy.setCut(true)
			<-time.After(outage) // the length of the outage is what is measured
			end := time.Now()
			g.proxy.setCut(false)

			requireOutagePace(t, start, end, g.proxy.perSecond(start, end), logs)

			_, err := g.producer.Enqueue(context.Background(), queue.NewTask("job", nil))
			require.NoError(t, err)
			receive(t, g.started, "a task after the outage")
		})
	}
}

// A wake-up published while the worker's subscription is down is lost
// (Pub/Sub keeps nothing), so the worker looks for work by itself once the
// subscription is back: here a task enqueued after the worker's first good
// lease call following an outage, while its subscription could not come
// back yet, starts within 2 s, not after the PollInterval of 30 s.
func TestWakeLostDuringOutageRecovered(t *testing.T) {
	g := setupProxied(t, "outage-wake", testredis.ServerOptions{}, redis.Options{})
	log, logs := observedLogger(t)
	startRuntime(t, g.worker, g.mux(), runtime.Config{Concurrency: 2, PollInterval: 30 * time.Second,
		MaxRedisBackoff: 200 * time.Millisecond, Logger: log})

	g.proxy.blockSubscriptions(true)
	g.proxy.setCut(true)
	require.Eventually(t, func() bool {
		return logs.FilterMessage("redis unavailable; backing off").Len() > 0
	}, 10*time.Second, 5*time.Millisecond, "the worker did not notice the outage")
	before := g.leases.count()
	g.proxy.setCut(false) // commands get through, subscriptions do not yet
	require.Eventually(t, func() bool { return g.leases.count() > before }, 10*time.Second, time.Millisecond,
		"no lease call after the outage")

	enqueued := time.Now()
	_, err := g.producer.Enqueue(context.Background(), queue.NewTask("job", nil))
	require.NoError(t, err)
	g.proxy.blockSubscriptions(false)
	select {
	case at := <-g.started:
		t.Logf("started %v after its Enqueue", at.Sub(enqueued))
	case <-time.After(2 * time.Second):
		t.Fatal("the task enqueued while the subscription was down waits for the slow poll")
	}
}

// TestOutageProbe measures, with OVERTAKE_OUTAGE_PROBE=1 (it takes
// minutes, and asserts nothing): the connection attempts a second of one
// worker with the default settings over a 12 s outage, with go-redis's
// default retries and with MaxRetries -1; and, over ten 3 s outages each,
// how long a task takes from its Enqueue to its start when it is enqueued
// right after the worker's first good lease call following the outage,
// and when it is enqueued at a random moment in the 2.5 s after Redis is
// reachable again.
//
//	OVERTAKE_OUTAGE_PROBE=1 scripts/with-redis.sh go test -count=1 -v -run TestOutageProbe ./runtime
func TestOutageProbe(t *testing.T) {
	if os.Getenv("OVERTAKE_OUTAGE_PROBE") == "" {
		t.Skip("a measurement: set OVERTAKE_OUTAGE_PROBE=1")
	}
	quiet := zap.NewNop()
	for _, retries := range []int{0, -1} {
		g := setupProxied(t, fmt.Sprintf("probe-rate%d", retries), testredis.ServerOptions{}, redis.Options{MaxRetries: retries})
		startRuntime(t, g.worker, g.mux(), runtime.Config{Concurrency: 4, Logger: quiet})
		start := time.Now()
		g.proxy.setCut(true)
		<-time.After(12 * time.Second)
		end := time.Now()
		g.proxy.setCut(false)
		from := start.Add(3 * time.Second)
		t.Logf("MaxRetries %d: attempts a second %v; seconds 4-12: %.2f a second", retries,
			g.proxy.perSecond(start, end), float64(g.proxy.acceptedBetween(from, end))/end.Sub(from).Seconds())
	}
	g := setupProxied(t, "probe-latency", testredis.ServerOptions{}, redis.Options{})
	startRuntime(t, g.worker, g.mux(), runtime.Config{Concurrency: 4, Logger: quiet})
	ctx := context.Background()
	trial := func(afterLease bool) time.Duration {
		g.proxy.setCut(true)
		<-time.After(3 * time.Second)
		before := g.leases.count()
		g.proxy.setCut(false)
		if afterLease {
			require.Eventually(t, func() bool { return g.leases.count() > before }, 10*time.Second, 100*time.Microsecond)
		} else {
			<-time.After(rand.N(2500 * time.Millisecond))
		}
		enqueued := time.Now()
		_, err := g.producer.Enqueue(ctx, queue.NewTask("job", nil))
		require.NoError(t, err)
		select {
		case at := <-g.started:
			return at.Sub(enqueued)
		case <-time.After(20 * time.Second):
			t.Fatal("the task did not start")
			return 0
		}
	}
	for _, afterLease := range []bool{true, false} {
		var lat []time.Duration
		for range 10 {
			lat = append(lat, trial(afterLease).Round(100*time.Microsecond))
		}
		t.Logf("enqueued %s: start latency %v", map[bool]string{true: "right after the first good lease call",
			false: "0-2.5 s after Redis is reachable"}[afterLease], lat)
	}
}

// When the wake-up subscription comes back the worker looks for work at
// once, outage or not: here Redis refuses the worker's SUBSCRIBE (an ACL
// user without channels) while its calls go through, a task is enqueued
// (its wake-up reaches nobody), and once the user may subscribe the task
// starts within 2 s, not after the PollInterval of 30 s.
func TestWakeSubscriptionBackLooksForWork(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	admin := srv.NewClient(t)
	ctx := context.Background()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "worker", "on", ">pw", "~*", "+@all", "resetchannels").Err())
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "worker", Password: "pw"})
	t.Cleanup(func() { _ = rdb.Close() })
	leases := &leaseCounter{}
	rdb.AddHook(leases)
	const ns = "wake-back"
	w, err := queue.New(rdb, queue.Config{Namespace: ns})
	require.NoError(t, err)
	producer, err := queue.New(admin, queue.Config{Namespace: ns})
	require.NoError(t, err)
	started := make(chan time.Time, 1)
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(context.Context, *queue.TaskInfo) error {
		started <- time.Now()
		return nil
	})
	log, logs := observedLogger(t)
	startRuntime(t, w, mux, runtime.Config{Concurrency: 2, PollInterval: 30 * time.Second,
		MaxRedisBackoff: 200 * time.Millisecond, Logger: log})
	require.Positive(t, logs.FilterMessage("wake-up subscription not confirmed; relying on the fallback poll until it is").Len())
	// The worker leased on the empty queue, and waits for the next poll,
	// 30 s away.
	require.Eventually(t, func() bool { return leases.quiet(300 * time.Millisecond) }, 10*time.Second,
		10*time.Millisecond, "the worker keeps leasing")

	_, err = producer.Enqueue(ctx, queue.NewTask("job", nil))
	require.NoError(t, err)
	granted := time.Now()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "worker", "allchannels").Err())
	select {
	case at := <-started:
		t.Logf("started %v after the subscription was allowed", at.Sub(granted))
	case <-time.After(2 * time.Second):
		t.Fatal("the task enqueued while the subscription was refused waits for the slow poll")
	}
}
