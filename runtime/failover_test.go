package runtime_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testredis/sentinelproc"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Failover test sizes: 1,500 tasks at 150/s, the primary killed halfway.
const (
	foTasks = 1500
	foRate  = 150
)

// foClient is a FailoverClient of the group with short timeouts.
func foClient(t *testing.T, s *testredis.Sentinel) *redis.Client {
	o := s.FailoverOptions()
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries = time.Second, time.Second, time.Second, 1
	return s.NewClient(t, o)
}

// foQueue is the test's queue on rdb: a short lease, so that a task whose
// ack was lost in the failover is recovered within seconds, and a retention
// that keeps done tasks' records, so that a retried Enqueue of a task that
// is there already gets ErrDuplicateTask. waitReplicas is its WaitReplicas.
func foQueue(t *testing.T, rdb *redis.Client, waitReplicas int) *queue.Client {
	q, err := queue.New(rdb, queue.Config{Namespace: "fo", LeaseDuration: 3 * time.Second, Retention: 10 * time.Minute,
		WaitReplicas: waitReplicas, WaitTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	return q
}

// A Sentinel failover under load: two runtimes on FailoverClients, a
// producer with WaitReplicas 1 enqueueing at a steady rate over three
// levels, the primary SIGKILLed halfway. No task whose Enqueue the replica
// confirmed is lost, no task runs twice at once; the figures (promotion,
// first start after the kill, duplicates, acknowledged but unconfirmed
// tasks lost to asynchronous replication) are logged.
func TestSentinelFailoverUnderLoad(t *testing.T) {
	s := testredis.StartSentinel(t, sentinelproc.Options{})
	ledger := newFoLedger()
	mux := handlers.NewMux()
	mux.HandleFunc("fo", func(ctx context.Context, tk *queue.TaskInfo) error {
		level, _ := strconv.Atoi(string(tk.Payload))
		return ledger.handle(ctx, tk.ID, []time.Duration{30, 10, 2}[level]*time.Millisecond)
	})
	for _, id := range []string{"fo-a", "fo-b"} {
		startRuntime(t, foQueue(t, foClient(t, s), 0), mux, runtime.Config{Concurrency: 8, WorkerID: id,
			Logger: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))})
	}
	p := &foProducer{q: foQueue(t, foClient(t, s), 1), acked: map[string]time.Time{}, unconfirmed: map[string]bool{}}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	half := make(chan struct{})
	fed := make(chan error, 1)
	go func() { fed <- p.feed(ctx, foTasks, foRate, half) }()
	select {
	case <-half:
	case err := <-fed:
		t.Fatalf("producer ended before half its tasks: %v", err)
	}
	old, killed, err := s.KillPrimary(ctx)
	require.NoError(t, err)
	primary, promoted, err := s.WaitFailover(ctx, old)
	require.NoError(t, err)
	// The old primary comes back as the new one's replica, so that the
	// producer's WAIT 1 can confirm again.
	require.NoError(t, s.Rejoin(ctx, old))
	select {
	case err := <-fed:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the producer did not finish")
	}

	confirmed, unconfirmed := p.ackedIDs()
	require.Len(t, append(confirmed, unconfirmed...), foTasks, "every Enqueue was acknowledged in the end")
	var lost []string
	require.Eventually(t, func() bool { lost = ledger.missing(confirmed); return len(lost) == 0 }, 30*time.Second,
		50*time.Millisecond, "%d tasks whose Enqueue a replica confirmed were lost, e.g. %v", len(lost), lost[:min(len(lost), 5)])
	lostUnconfirmed := ledger.missing(unconfirmed)

	ledger.mu.Lock()
	dups, overlaps := 0, ledger.overlaps
	for _, n := range ledger.runs {
		dups += max(n-1, 0)
	}
	ledger.mu.Unlock()
	lat := foLatencies(p, ledger, promoted)
	first := ledger.firstStartAfter(killed)
	// Enqueued once a worker was back (its first start after the kill):
	// what the wake-up path gives, without the wait for the workers' next
	// probe.
	latBack := foLatencies(p, ledger, first)
	// And a second later, once the producer, which sends the tasks it
	// owes back to back after the outage, has caught up.
	latLater := foLatencies(p, ledger, first.Add(time.Second))
	t.Logf("primary %s killed; %s promoted %v after the kill; first task start %v after the kill",
		old, primary, promoted.Sub(killed).Round(time.Millisecond), first.Sub(killed).Round(time.Millisecond))
	t.Logf("%d tasks acknowledged, %d confirmed by a replica, %d not (%d of those lost); %d failed Enqueue calls retried",
		foTasks, len(confirmed), len(unconfirmed), len(lostUnconfirmed), p.failures)
	t.Logf("%d duplicate runs, %d overlapping runs; start latency of the %d tasks enqueued after the promotion: p50 %v, p99 %v",
		dups, len(overlaps), len(lat), foPct(lat, 50), foPct(lat, 99))
	t.Logf("start latency of the %d tasks enqueued after the first start that followed the kill: p50 %v, p99 %v, max %v; "+
		"of the %d enqueued 1 s or more after it: p50 %v, p99 %v, max %v", len(latBack), foPct(latBack, 50),
		foPct(latBack, 99), foPct(latBack, 100), len(latLater), foPct(latLater, 50), foPct(latLater, 99), foPct(latLater, 100))
	assert.Empty(t, overlaps, "tasks run twice at once")
	assert.False(t, first.IsZero(), "no task started after the kill")
}

// foPct is the p-th percentile of sorted durations.
func foPct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100].Round(100 * time.Microsecond)
}
