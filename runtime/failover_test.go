package runtime_test

import (
	"context"
	"os"
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
	failoverTasks = 1500
	failoverRate  = 150
)

// sentinelClient is a FailoverClient of the group with short timeouts.
func sentinelClient(t *testing.T, s *testredis.Sentinel) *redis.Client {
	o := s.FailoverOptions()
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.MaxRetries = time.Second, time.Second, time.Second, 1
	return s.NewClient(t, o)
}

// sentinelQueue is the test's queue on rdb: a short lease, so that a task whose
// ack was lost in the failover is recovered within seconds, and a retention
// that keeps done tasks' records, so that a retried Enqueue of a task that
// is there already gets ErrDuplicateTask. waitReplicas is its WaitReplicas.
func sentinelQueue(t *testing.T, rdb *redis.Client, waitReplicas int) *queue.Client {
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
// tasks lost to asynchronous replication) are logged. From the kill until
// 3 s after the first probe started, failoverProbe measures the wake-up path
// apart from the producer's backlog (a third runtime, on a queue of its
// own, idle but for the probes); every probe enqueued must start, and the
// probes' start latencies, from the promotion and from that runtime's
// first good call after the kill, are logged. OVERTAKE_FAILOVER_DOWN_AFTER
// (a duration) sets the sentinels' down-after-milliseconds (default 1 s),
// for a longer outage before the promotion, and
// OVERTAKE_FAILOVER_MAX_BACKOFF the runtimes' MaxRedisBackoff (default
// 2 s):
//
//	OVERTAKE_FAILOVER_DOWN_AFTER=5s scripts/with-redis.sh go test -count=1 -v -run TestSentinelFailoverUnderLoad ./runtime
func TestSentinelFailoverUnderLoad(t *testing.T) {
	downAfter, _ := time.ParseDuration(os.Getenv("OVERTAKE_FAILOVER_DOWN_AFTER"))
	maxBackoff, _ := time.ParseDuration(os.Getenv("OVERTAKE_FAILOVER_MAX_BACKOFF"))
	s := testredis.StartSentinel(t, sentinelproc.Options{DownAfter: downAfter})
	ledger := newFoLedger()
	mux := handlers.NewMux()
	mux.HandleFunc("fo", func(ctx context.Context, tk *queue.TaskInfo) error {
		level, _ := strconv.Atoi(string(tk.Payload))
		return ledger.handle(ctx, tk.ID, []time.Duration{30, 10, 2}[level]*time.Millisecond)
	})
	var good []*goodCall // fo-a's, fo-b's and the probe runtime's clients'
	for _, id := range []string{"fo-a", "fo-b"} {
		rdb := sentinelClient(t, s)
		good = append(good, &goodCall{})
		rdb.AddHook(good[len(good)-1])
		startRuntime(t, sentinelQueue(t, rdb, 0), mux, runtime.Config{Concurrency: 8, WorkerID: id,
			MaxRedisBackoff: maxBackoff, Logger: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))})
	}
	probe := startFoProbe(t, s, &good, maxBackoff)
	p := &ledgerProducer{q: sentinelQueue(t, sentinelClient(t, s), 1), acked: map[string]time.Time{}, unconfirmed: map[string]bool{}}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	half := make(chan struct{})
	fed := make(chan error, 1)
	go func() { fed <- p.feed(ctx, failoverTasks, failoverRate, half) }()
	select {
	case <-half:
	case err := <-fed:
		t.Fatalf("producer ended before half its tasks: %v", err)
	}
	old, killed, err := s.KillPrimary(ctx)
	require.NoError(t, err)
	back := make([]<-chan time.Time, len(good))
	for i, g := range good {
		back[i] = g.arm()
	}
	probed := make(chan struct{})
	go func() { defer close(probed); probe.run(ctx, 3*time.Second) }()
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
	require.Len(t, append(confirmed, unconfirmed...), failoverTasks, "every Enqueue was acknowledged in the end")
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
	lat := ledgerLatencies(p, ledger, promoted)
	first := ledger.firstStartAfter(killed)
	// Enqueued once a worker was back (its first start after the kill):
	// what the wake-up path gives, without the wait for the workers' next
	// probe.
	latBack := ledgerLatencies(p, ledger, first)
	// And a second later, once the producer, which sends the tasks it
	// owes back to back after the outage, has caught up.
	latLater := ledgerLatencies(p, ledger, first.Add(time.Second))
	t.Logf("primary %s killed; %s promoted %v after the kill; first task start %v after the kill",
		old, primary, promoted.Sub(killed).Round(time.Millisecond), first.Sub(killed).Round(time.Millisecond))
	t.Logf("%d tasks acknowledged, %d confirmed by a replica, %d not (%d of those lost); %d failed Enqueue calls retried",
		failoverTasks, len(confirmed), len(unconfirmed), len(lostUnconfirmed), p.failures)
	t.Logf("%d duplicate runs, %d overlapping runs; start latency of the %d tasks enqueued after the promotion: p50 %v, p99 %v",
		dups, len(overlaps), len(lat), percentile(lat, 50), percentile(lat, 99))
	t.Logf("start latency of the %d tasks enqueued after the first start that followed the kill: p50 %v, p99 %v, max %v; "+
		"of the %d enqueued 1 s or more after it: p50 %v, p99 %v, max %v", len(latBack), percentile(latBack, 50),
		percentile(latBack, 99), percentile(latBack, 100), len(latLater), percentile(latLater, 50), percentile(latLater, 99), percentile(latLater, 100))
	assert.Empty(t, overlaps, "tasks run twice at once")
	assert.False(t, first.IsZero(), "no task started after the kill")

	select {
	case <-probed:
	case <-ctx.Done():
		t.Fatal("the probes did not end")
	}
	var late []string
	require.Eventually(t, func() bool { late = probe.notStarted(); return len(late) == 0 }, 20*time.Second,
		50*time.Millisecond, "%d probes enqueued never started, e.g. %v", len(late), late[:min(len(late), 5)])
	reportProbeFigures(t, probe, killed, promoted, back)
}

// startFoProbe starts the probes' runtime on a FailoverClient of its own,
// with the default settings but 4 slots (a poll every 10 s, so that a lost
// wake-up shows as seconds) and maxBackoff, and appends the goodCall
// hook of its client to good. The probes' producer has a FailoverClient of
// its own too, without WaitReplicas: a probe's Enqueue returns as soon as
// the primary has it.
func startFoProbe(t *testing.T, s *testredis.Sentinel, good *[]*goodCall, maxBackoff time.Duration) *failoverProbe {
	rdb := sentinelClient(t, s)
	*good = append(*good, &goodCall{})
	rdb.AddHook((*good)[len(*good)-1])
	q, err := queue.New(rdb, queue.Config{Namespace: "fo-probe"})
	require.NoError(t, err)
	pq, err := queue.New(sentinelClient(t, s), queue.Config{Namespace: "fo-probe"})
	require.NoError(t, err)
	probe := newFoProbe(pq)
	mux := handlers.NewMux()
	mux.HandleFunc("probe", probe.handle)
	startRuntime(t, q, mux, runtime.Config{Concurrency: 4, WorkerID: "fo-probe", MaxRedisBackoff: maxBackoff,
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))})
	return probe
}

// reportProbeFigures logs the probes' start latencies: of all of them (each
// Enqueue that succeeded after the kill reached the new primary), of those
// enqueued after the promotion (as WaitFailover, polling a sentinel, saw
// it: clients may reach the new primary tens of milliseconds earlier),
// after the probe runtime's first good call following the kill, and 1 s or
// more after that call; and when each runtime's first good call came.
// back are the armed goodCall channels, the probe runtime's last.
func reportProbeFigures(t *testing.T, probe *failoverProbe, killed, promoted time.Time, back []<-chan time.Time) {
	calls := make([]time.Time, len(back))
	for i, ch := range back {
		select {
		case calls[i] = <-ch:
		default: // no good call since the kill
		}
	}
	since := func(at time.Time) string {
		if at.IsZero() {
			return "never"
		}
		return at.Sub(promoted).Round(time.Millisecond).String()
	}
	good := calls[len(calls)-1]
	t.Logf("first good call after the kill, from the promotion (%v after the kill): fo-a %s, fo-b %s, probe runtime %s; "+
		"first probe start %s", promoted.Sub(killed).Round(time.Millisecond), since(calls[0]), since(calls[1]),
		since(good), since(probe.firstStart()))
	probe.mu.Lock()
	t.Logf("probes: %d enqueued, %d failed Enqueue calls", len(probe.enqueued), probe.failures)
	probe.mu.Unlock()
	for _, c := range []struct {
		what  string
		after time.Time
	}{{"after the kill (all)", killed}, {"after the promotion", promoted}, {"after the probe runtime's first good call", good},
		{"1 s or more after that call", good.Add(time.Second)}} {
		lat := probe.latencies(c.after)
		t.Logf("probe start latency, %d enqueued %s: p50 %v, p99 %v, max %v", len(lat), c.what,
			percentile(lat, 50), percentile(lat, 99), percentile(lat, 100))
	}
	t.Logf("probes slower than 2 ms (enqueued, from the promotion: latency):%s", probe.slow(promoted, 2*time.Millisecond))
}

// percentile is the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100].Round(100 * time.Microsecond)
}

// TestStalledPrimaryWakeProbe measures, with OVERTAKE_STALL_PROBE=1 (it
// asserts nothing), a failover whose old primary survives: the primary
// stalls (DEBUG SLEEP 4) until the sentinels promote its replica, then
// answers again, a primary still, until the sentinels make it a replica
// (some 10 s later, with CLIENT KILL TYPE pubsub). A runtime with the
// default settings on a FailoverClient follows the new primary with its
// commands; go-redis closes a FailoverClient's command connections to the
// old primary on +switch-master, not its Pub/Sub connections, so the
// wake-up subscription follows only through the runtime's checks (after
// the outage, and on the sentinels' hello naming a new epoch): a
// subscription left on the old primary makes tasks start only at the
// runtime's poll (PollInterval, 10 s). It logs the start latency of the
// tasks a failoverProbe enqueues in the 12 s after the stall.
//
//	OVERTAKE_STALL_PROBE=1 scripts/with-redis.sh go test -count=1 -v -run TestStalledPrimaryWakeProbe ./runtime
func TestStalledPrimaryWakeProbe(t *testing.T) {
	if os.Getenv("OVERTAKE_STALL_PROBE") == "" {
		t.Skip("a measurement: set OVERTAKE_STALL_PROBE=1")
	}
	s := testredis.StartSentinel(t, sentinelproc.Options{Args: []string{"--enable-debug-command", "yes"}})
	newQueue := func() *queue.Client {
		q, err := queue.New(sentinelClient(t, s), queue.Config{Namespace: "stall"})
		require.NoError(t, err)
		return q
	}
	probe := newFoProbe(newQueue())
	mux := handlers.NewMux()
	mux.HandleFunc("probe", probe.handle)
	startRuntime(t, newQueue(), mux, runtime.Config{Concurrency: 4,
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := s.Primary(ctx)
	require.NoError(t, err)
	slept := make(chan error, 1)
	go func() {
		c := redis.NewClient(&redis.Options{Addr: old, ReadTimeout: 10 * time.Second})
		defer c.Close()
		slept <- c.Do(ctx, "DEBUG", "SLEEP", "4").Err()
	}()
	primary, promoted, err := s.WaitFailover(ctx, old)
	require.NoError(t, err)
	require.NoError(t, <-slept)
	awake := time.Now()
	pctx, stop := context.WithTimeout(ctx, 12*time.Second)
	defer stop()
	probe.run(pctx, time.Hour)
	require.Eventually(t, func() bool { return len(probe.notStarted()) == 0 }, 20*time.Second, 50*time.Millisecond)
	lat := probe.latencies(awake)
	t.Logf("%s stalled; %s promoted; %s awake %v after the promotion", old, primary, old,
		awake.Sub(promoted).Round(time.Millisecond))
	t.Logf("start latency of %d tasks enqueued after that: p50 %v, p99 %v, max %v", len(lat), percentile(lat, 50),
		percentile(lat, 99), percentile(lat, 100))
	n, last := probe.slowCount(awake, 10*time.Millisecond)
	t.Logf("%d of them took over 10 ms, the last enqueued %v after the promotion", n, last.Sub(promoted).Round(time.Millisecond))
}
