package runtime_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// switchable is a worker's client whose dialer reaches whichever address
// target holds, as a FailoverClient's reaches the current primary.
type switchable struct {
	target atomic.Value // string
	rdb    *redis.Client
}

func newSwitchable(t *testing.T, addr string) *switchable {
	s := &switchable{}
	s.target.Store(addr)
	s.rdb = redis.NewClient(&redis.Options{Addr: "primary", Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, s.target.Load().(string))
	}})
	t.Cleanup(func() { _ = s.rdb.Close() })
	return s
}

// subscribers returns how many clients of srv subscribe to channel.
func subscribers(t *testing.T, srv *testredis.Server, channel string) int64 {
	n, err := srv.NewClient(t).PubSubNumSub(context.Background(), channel).Result()
	require.NoError(t, err)
	return n[channel]
}

// After a failover whose old primary survives, go-redis's FailoverClient
// moves its command connections to the new primary but leaves a Pub/Sub
// connection on the old one, which answers its PINGs and, still a
// primary, never hears the new one's wake-ups. Here the worker's dialer
// switches from server A to server B and A ends the worker's command
// connections (CLIENT KILL TYPE normal, as the FailoverClient does on
// +switch-master), while A stays up. The subscription's check, a message
// to itself published through the commands' connections, reaches no one,
// and the worker subscribes again, on B. Before, it stayed on A for good:
// tasks started only at the poll.
func TestSubscriptionFollowsCommandsServer(t *testing.T) {
	a := testredis.StartServer(t, testredis.ServerOptions{})
	b := testredis.StartServer(t, testredis.ServerOptions{})
	w := newSwitchable(t, a.Addr())
	q, err := queue.New(w.rdb, queue.Config{Namespace: "sub-elsewhere"})
	require.NoError(t, err)
	started := newJobStarts()
	startRuntime(t, q, started.mux(), runtime.Config{Concurrency: 2, PollInterval: 2 * time.Second,
		HeartbeatInterval: time.Second})

	ctx := context.Background()
	wake := store.Of(q).WakeChannel()
	require.Eventually(t, func() bool { return subscribers(t, a, wake) == 1 }, 5*time.Second, 5*time.Millisecond)

	w.target.Store(b.Addr()) // the failover: B is the primary now
	require.NoError(t, a.NewClient(t).ClientKillByFilter(ctx, "TYPE", "normal").Err())
	require.Eventually(t, func() bool { return subscribers(t, b, wake) == 1 }, 15*time.Second, 10*time.Millisecond,
		"the wake-up subscription stayed on the old server")
	require.Zero(t, subscribers(t, a, wake))

	producer, err := queue.New(b.NewClient(t), queue.Config{Namespace: "sub-elsewhere"})
	require.NoError(t, err)
	_, err = producer.Enqueue(ctx, queue.NewTask("job", nil))
	require.NoError(t, err)
	receive(t, started, "a task enqueued on the new server")
}

// An ACL written for the wake channel alone (&{ns:*}:wake, the rule
// before the check channel) refuses the worker's check channel: the
// worker says so once and subscribes to the wake channel alone, checked
// with PINGs, and wake-ups still start tasks (here within 2 s, with a
// poll every 30 s).
func TestSubscriptionUnderWakeOnlyACL(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	admin := srv.NewClient(t)
	ctx := context.Background()
	const ns = "wake-only-acl"
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "worker", "on", ">pw", "~*", "+@all", "resetchannels",
		"&{"+ns+":*}:wake").Err())
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "worker", Password: "pw"})
	t.Cleanup(func() { _ = rdb.Close() })
	w, err := queue.New(rdb, queue.Config{Namespace: ns})
	require.NoError(t, err)
	producer, err := queue.New(admin, queue.Config{Namespace: ns})
	require.NoError(t, err)
	started := newJobStarts()
	log, logs := observedLogger(t)
	startRuntime(t, w, started.mux(), runtime.Config{Concurrency: 2, PollInterval: 30 * time.Second, Logger: log})
	wake := store.Of(w).WakeChannel()
	require.Eventually(t, func() bool {
		n, err := admin.PubSubNumSub(ctx, wake).Result()
		return err == nil && n[wake] == 1
	}, 10*time.Second, 5*time.Millisecond, "no wake-up subscription")
	require.Equal(t, 1, logs.FilterMessageSnippet("the ACL refuses the subscription check channel").Len())

	started.requireWoken(t, ctx, producer)
}

// When an outage ends the worker checks its subscription at once: its
// commands may now reach another server (a failover), and a subscription
// that saw no failure would stay on the old one until a silence of
// PollInterval (30 s here). Here server A stays up with the subscription
// while the worker's commands fail (their dialer points at a closed
// port), then reach server B: the subscription moves to B within 10 s.
func TestSubscriptionCheckedWhenOutageEnds(t *testing.T) {
	a := testredis.StartServer(t, testredis.ServerOptions{})
	b := testredis.StartServer(t, testredis.ServerOptions{})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := closed.Addr().String()
	require.NoError(t, closed.Close())
	w := newSwitchable(t, a.Addr())
	const ns = "sub-outage-end"
	q, err := queue.New(w.rdb, queue.Config{Namespace: ns})
	require.NoError(t, err)
	started := newJobStarts()
	log, logs := observedLogger(t)
	startRuntime(t, q, started.mux(), runtime.Config{Concurrency: 2, PollInterval: 30 * time.Second,
		HeartbeatInterval: 10 * time.Second, Logger: log})
	ctx := context.Background()
	wake := store.Of(q).WakeChannel()
	require.Eventually(t, func() bool { return subscribers(t, a, wake) == 1 }, 5*time.Second, 5*time.Millisecond)

	w.target.Store(refused)
	require.NoError(t, a.NewClient(t).ClientKillByFilter(ctx, "TYPE", "normal").Err())
	onA, err := queue.New(a.NewClient(t), queue.Config{Namespace: ns})
	require.NoError(t, err)
	_, err = onA.Enqueue(ctx, queue.NewTask("job", nil)) // its wake-up makes the worker call, and fail
	require.NoError(t, err)
	waitForLog(t, logs, "the outage", func(e observer.LoggedEntry) bool {
		return e.Message == "redis unavailable; backing off"
	})
	w.target.Store(b.Addr())
	require.Eventually(t, func() bool { return subscribers(t, b, wake) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the wake-up subscription stayed on the old server after the outage")
}
