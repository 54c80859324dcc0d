package runtime_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// dialCounter is a go-redis Options.Dialer that records when each
// connection attempt was made: every attempt reaches it, refused ones
// included (behind the client's hooks, after go-redis's own retries).
type dialCounter struct {
	mu sync.Mutex
	at []time.Time
}

func (d *dialCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.at = append(d.at, time.Now())
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// perSecond lists the attempts in each second from start to end.
func (d *dialCounter) perSecond(start, end time.Time) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int
	for s := start; s.Before(end); s = s.Add(time.Second) {
		n := 0
		for _, a := range d.at {
			if !a.Before(s) && a.Before(s.Add(time.Second)) && a.Before(end) {
				n++
			}
		}
		out = append(out, n)
	}
	return out
}

// While Redis is down and its port refuses connections, a worker with
// the default settings and go-redis's default retries (MaxRetries 3,
// DialerRetries 5) makes at most one connection attempt a second from the
// fourth second of the outage on, all its loops together: the dispatcher's
// probe, the ack of a task that ends during the outage, a periodic
// schedule due every second. Before, each call dialed up to five times
// and every loop made its own calls: 2.5 attempts a second over seconds
// 4–30 of an outage (counted by this test's dialer). Afterwards the late
// ack lands and a new task runs.
func TestOutageRefusedConnectionRate(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{Persistent: true})
	dc := &dialCounter{}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Dialer: dc.dial})
	t.Cleanup(func() { _ = rdb.Close() })
	worker, err := queue.New(rdb, queue.Config{Namespace: "refused-rate"})
	require.NoError(t, err)
	producer, err := queue.New(srv.NewClient(t), queue.Config{Namespace: "refused-rate"})
	require.NoError(t, err)

	release := make(chan struct{})
	started := make(chan string, 64)
	mux := handlers.NewMux()
	mux.HandleFunc("held", func(_ context.Context, tk *queue.TaskInfo) error {
		started <- tk.ID
		<-release // returns during the outage: its ack waits for Redis
		return nil
	})
	mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
		started <- tk.ID
		return nil
	})
	mux.HandleFunc("tick", func(context.Context, *queue.TaskInfo) error { return nil })
	log, logs := observedLogger(t)
	startRuntime(t, worker, mux, runtime.Config{Concurrency: 4, Logger: log, Periodic: []runtime.Periodic{
		{Name: "every-second", Spec: "@every 1s", Task: queue.NewTask("tick", nil)}}})
	held, err := producer.Enqueue(context.Background(), queue.NewTask("held", nil))
	require.NoError(t, err)
	require.Equal(t, held.ID, receive(t, started, "the held task to start"))

	const outage = 8 * time.Second
	start := time.Now()
	require.NoError(t, srv.Stop())
	<-time.After(time.Second) // the outage has begun when the handler returns
	close(release)
	<-time.After(outage - time.Second) // the length of the outage is what is measured
	end := time.Now()
	require.NoError(t, srv.Restart())
	requireOutagePace(t, start, end, dc.perSecond(start, end), logs)

	require.Eventually(t, func() bool {
		tk, err := producer.Inspect(context.Background(), held.ID)
		return errors.Is(err, queue.ErrTaskNotFound) || (err == nil && tk.State == queue.StateDone)
	}, 30*time.Second, 10*time.Millisecond, "the ack of the task that ended during the outage did not land")
	job, err := producer.Enqueue(context.Background(), queue.NewTask("job", nil))
	require.NoError(t, err)
	require.Equal(t, job.ID, receive(t, started, "a task after the outage"))
}

// requireOutagePace asserts, for an outage from start to end, at most one
// connection attempt a second from its fourth second on (perSecond: the
// attempts in each second from start), and no more warnings logged then.
func requireOutagePace(t *testing.T, start, end time.Time, perSecond []int, logs *observer.ObservedLogs) {
	t.Helper()
	t.Logf("connection attempts in each second of the outage: %v", perSecond)
	from := start.Add(3 * time.Second)
	limit := int(end.Sub(from).Seconds() + 0.5) // one a second
	attempts := 0
	for _, n := range perSecond[3:] {
		attempts += n
	}
	require.LessOrEqual(t, attempts, limit,
		"connection attempts from the fourth second of the outage on: %v a second", perSecond[3:])
	lines := 0
	for _, e := range logs.All() {
		if e.Level >= zapcore.WarnLevel && !e.Time.Before(from) && e.Time.Before(end) {
			lines++
		}
	}
	require.LessOrEqual(t, lines, limit, "warnings logged from the fourth second of the outage on")
}
