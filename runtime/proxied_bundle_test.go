package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// proxiedBundle is the test world of the outage tests: a real,
// restartable redis-server of its own, the worker's client behind a
// tcpProxy (so that an outage is either the server stopped, with the port
// still answering, or the link cut), with two hooks on that client — its
// lease calls counted (leases) and its next good call reported (good) —
// and a producer's client straight to the server. Its "job" tasks report
// their start on started.
type proxiedBundle struct {
	srv      *testredis.Server
	proxy    *tcpProxy
	worker   *queue.Client // through the proxy
	producer *queue.Client // straight to Redis
	leases   *leaseCounter
	good     *goodCall
	started  jobStarts
}

// setupProxied starts the server (srv), the proxy and the two clients of
// queue ns; opts are the worker client's options (Addr is set here).
func setupProxied(t *testing.T, ns string, srv testredis.ServerOptions, opts redis.Options) *proxiedBundle {
	t.Helper()
	g := &proxiedBundle{srv: testredis.StartServer(t, srv), leases: &leaseCounter{}, good: &goodCall{},
		started: newJobStarts()}
	g.proxy = startProxy(t, g.srv.Addr())
	opts.Addr = g.proxy.addr()
	rdb := redis.NewClient(&opts)
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(g.leases)
	rdb.AddHook(g.good)
	var err error
	g.worker, err = queue.New(rdb, queue.Config{Namespace: ns})
	require.NoError(t, err)
	g.producer, err = queue.New(g.srv.NewClient(t), queue.Config{Namespace: ns})
	require.NoError(t, err)
	return g
}

// mux runs "job" tasks, reporting when each started.
func (g *proxiedBundle) mux() handlers.Handler { return g.started.mux() }

// jobStarts receives the start time of each "job" task its mux runs.
type jobStarts chan time.Time

func newJobStarts() jobStarts { return make(jobStarts, 16) }

// mux runs "job" tasks, reporting when each started.
func (s jobStarts) mux() handlers.Handler {
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(context.Context, *queue.TaskInfo) error {
		s <- time.Now()
		return nil
	})
	return mux
}

// requireWoken enqueues a job with producer and requires it to start
// within 2 s: woken by its announcement, not found by a later poll.
func (s jobStarts) requireWoken(t *testing.T, ctx context.Context, producer *queue.Client) {
	t.Helper()
	enqueued := time.Now()
	_, err := producer.Enqueue(ctx, queue.NewTask("job", nil))
	require.NoError(t, err)
	select {
	case at := <-s:
		t.Logf("started %v after its Enqueue", at.Sub(enqueued))
	case <-time.After(2 * time.Second):
		t.Fatal("the task waits for the poll: no wake-up subscription")
	}
}
