package runtime_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testredis/sentinelproc"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// failbackStartBound is what TestSubscriptionFollowsFailback allows a
// task to take to start: far below the 10 s poll that a subscription left
// on the demoted primary falls back to, and far above the wake-up path's
// few milliseconds, for a loaded machine. switchoverStartBound is
// TestSubscriptionFollowsSwitchover's: the sentinels' hello, which
// announces a failover no outage showed, comes every 2 s.
const (
	failbackStartBound   = time.Second
	switchoverStartBound = 3 * time.Second
)

// A Sentinel fail-back: the primary A is SIGKILLed, the sentinels promote
// B, A comes back as B's replica, and some 2 s after B's promotion A is
// promoted again (SENTINEL FAILOVER). B lives on, a primary still, until
// the sentinels make it a replica some 10 s later; go-redis's
// FailoverClient moves the worker's command connections to A on
// +switch-master but not its wake-up subscription, which a check as the
// first outage ended had found in place on B. A task enqueued on A 1 s
// after it answers as the primary must start within failbackStartBound:
// before, the subscription stayed on B, and tasks waited for the poll
// (PollInterval, 10 s by default) or for the sentinels' CLIENT KILL.
//
// OVERTAKE_FAILBACKS=N makes N fail-backs in a row, one group, and logs
// the start latency over all of them:
//
//	OVERTAKE_FAILBACKS=20 scripts/with-redis.sh go test -count=1 -v -run TestSubscriptionFollowsFailback ./runtime
func TestSubscriptionFollowsFailback(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("OVERTAKE_FAILBACKS"))
	followSwitches(t, max(rounds, 1), failbackStartBound, func(ctx context.Context, s *testredis.Sentinel) (string, string) {
		fb := failBack(ctx, t, s)
		t.Logf("%s killed, %s promoted %v later; %s promoted again %v after that", fb.first, fb.second,
			fb.promoted.Sub(fb.killed).Round(time.Millisecond), fb.primary, fb.failedBack.Sub(fb.promoted).Round(time.Millisecond))
		return fb.second, fb.primary
	})
}

// A switchover (SENTINEL FAILOVER) on a healthy group, whose hello the
// worker heard: the worker's calls see no outage, and its commands move to
// the new primary on +switch-master while the old one lives on, a primary
// still, for some 10 s. The sentinels' next hello, which the subscription
// hears on the old primary, announces the failover: a task enqueued on
// the new primary 1 s after it answers starts within
// switchoverStartBound. Before, it waited for the poll.
func TestSubscriptionFollowsSwitchover(t *testing.T) {
	followSwitches(t, 1, switchoverStartBound, func(ctx context.Context, s *testredis.Sentinel) (string, string) {
		primary, err := s.Primary(ctx)
		require.NoError(t, err)
		hello := redis.NewClient(&redis.Options{Addr: primary}).Subscribe(ctx, "__sentinel__:hello")
		defer hello.Close()
		_, err = hello.ReceiveMessage(ctx) // the worker, subscribed already, heard it too
		require.NoError(t, err)
		old, primary, _, err := s.Failover(ctx)
		require.NoError(t, err)
		return old, primary
	})
}

// followSwitches runs a worker on a FailoverClient of a new Sentinel group
// (the default settings but 4 slots: a poll every 10 s) and, rounds times,
// makes the primary switch with switchOver, which returns the demoted
// primary and the new one, once the new one answers. Then, for 1 s from 1 s
// after it answers, a failoverProbe enqueues tasks directly on the new
// primary: each must start within bound (followRound). It logs their
// start latency, each round's and over all rounds. A round in which the
// sentinels moved the primary again runs again (3 tries).
func followSwitches(t *testing.T, rounds int, bound time.Duration, switchOver func(context.Context, *testredis.Sentinel) (demoted, primary string)) {
	s := testredis.StartSentinel(t, sentinelproc.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(3*rounds)*time.Minute+time.Minute) // 3 tries a round
	defer cancel()
	var probe atomic.Pointer[failoverProbe] // the round's
	mux := handlers.NewMux()
	mux.HandleFunc("probe", func(ctx context.Context, tk *queue.TaskInfo) error { return probe.Load().handle(ctx, tk) })
	q, err := queue.New(sentinelClient(t, s), queue.Config{Namespace: "fb"})
	require.NoError(t, err)
	startRuntime(t, q, mux, runtime.Config{Concurrency: 4, WorkerID: "fb",
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))})
	wake := store.Of(q).WakeChannel()

	var all []time.Duration
	for round := range rounds {
		for try := 1; ; try++ {
			lat, switched := followRound(ctx, t, s, wake, &probe, fmt.Sprintf("%d.%d-", round, try), bound, switchOver)
			if !switched {
				all = append(all, lat...)
				break
			}
			// The sentinels moved the primary again while the probes ran
			// (under load they may undo a fail-back): the probes enqueued on
			// the node that lost it are gone with its data, and the round
			// measured nothing. It runs again, up to 3 times.
			t.Logf("round %d, try %d: the primary changed again while the probes ran; the round runs again", round, try)
			require.Less(t, try, 3, "round %d: the Sentinel group kept switching", round)
		}
	}
	slices.Sort(all)
	t.Logf("%d rounds, %d tasks: start latency p50 %v, p99 %v, max %v", rounds, len(all),
		percentile(all, 50), percentile(all, 99), percentile(all, 100))
}

// followRound is one round of followSwitches: it makes the primary switch
// with switchOver and enqueues probes (their IDs tagged tag) on the new
// primary for 1 s from 1 s after it answers; each must start within bound.
// It returns their start latencies, or switched when the primary changed
// again before they all started (the round measured nothing).
func followRound(ctx context.Context, t *testing.T, s *testredis.Sentinel, wake string, probe *atomic.Pointer[failoverProbe],
	tag string, bound time.Duration, switchOver func(context.Context, *testredis.Sentinel) (demoted, primary string)) (
	lat []time.Duration, switched bool) {
	t.Helper()
	require.NoError(t, s.WaitReplicas(ctx, 1)) // the last round's demoted primary in sync
	first, err := s.Primary(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return numSub(ctx, first, wake) == 1 }, 15*time.Second,
		10*time.Millisecond, "%s: no wake-up subscription on the primary %s", tag, first)
	demoted, primary := switchOver(ctx, s)
	answered := time.Now()
	rdb := redis.NewClient(&redis.Options{Addr: primary})
	defer rdb.Close()
	pq, err := queue.New(rdb, queue.Config{Namespace: "fb"})
	require.NoError(t, err)
	p := newFoProbe(pq)
	p.tag = tag
	probe.Store(p)
	select {
	case <-time.After(time.Until(answered.Add(time.Second))):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	pctx, stop := context.WithTimeout(ctx, time.Second)
	p.run(pctx, time.Hour)
	stop()
	moved := func() bool { now, err := s.Primary(ctx); return err == nil && now != primary }
	require.Eventually(t, func() bool { switched = moved(); return switched || len(p.notStarted()) == 0 }, 20*time.Second,
		10*time.Millisecond)
	if switched {
		return nil, true
	}
	lat = p.latencies(answered)
	t.Logf("%s: %d tasks enqueued on %s 1 s after it answered: p50 %v, p99 %v, max %v", tag, len(lat),
		primary, percentile(lat, 50), percentile(lat, 99), percentile(lat, 100))
	require.NotEmpty(t, lat)
	if lat[len(lat)-1] >= bound && moved() {
		return nil, true // the switch came while the probes ran: their starts waited for it
	}
	require.Less(t, lat[len(lat)-1], bound, "%s: a task waited for the poll: "+
		"the wake-up subscription stayed on the demoted primary %s", tag, demoted)
	return lat, false
}

// failback is one fail-back of a Sentinel group: first was the primary,
// killed at killed; second was promoted at promoted; first was promoted
// again at failedBack and is primary.
type failback struct {
	first, second, primary       string
	killed, promoted, failedBack time.Time
}

// failBack SIGKILLs the primary, waits for the promotion of its replica,
// brings the old primary back as a replica in sync, and promotes it again
// (SENTINEL FAILOVER) 2 s after the first promotion, or as soon after as
// a sentinel finds it fit.
func failBack(ctx context.Context, t *testing.T, s *testredis.Sentinel) failback {
	t.Helper()
	var fb failback
	var err error
	fb.first, fb.killed, err = s.KillPrimary(ctx)
	require.NoError(t, err)
	fb.second, fb.promoted, err = s.WaitFailover(ctx, fb.first)
	require.NoError(t, err)
	require.NoError(t, s.Rejoin(ctx, fb.first))
	require.NoError(t, s.WaitReplicas(ctx, 1))
	select {
	case <-time.After(time.Until(fb.promoted.Add(2 * time.Second))):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	var old string
	old, fb.primary, fb.failedBack, err = s.Failover(ctx)
	require.NoError(t, err)
	require.Equal(t, fb.second, old)
	require.Equal(t, fb.first, fb.primary, "the fail-back promoted another node")
	return fb
}

// numSub returns how many clients of the Redis at addr subscribe to
// channel, -1 if it does not answer.
func numSub(ctx context.Context, addr, channel string) int64 {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	n, err := c.PubSubNumSub(ctx, channel).Result()
	if err != nil {
		return -1
	}
	return n[channel]
}

// A Redis user of the documented ACL before the sentinels' hello channel
// (&{ns:*}:wake*) on a Sentinel group: the worker's FailoverClient
// subscription is refused once (NOPERM), the worker says so once and
// subscribes without that channel, and wake-ups still start tasks (within
// 2 s, with a poll every 30 s).
func TestSubscriptionUnderACLWithoutHello(t *testing.T) {
	s := testredis.StartSentinel(t, sentinelproc.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "fb-acl"
	for _, addr := range s.NodeAddrs() { // ACLs are per node
		c := redis.NewClient(&redis.Options{Addr: addr})
		require.NoError(t, c.Do(ctx, "ACL", "SETUSER", "worker", "on", ">pw", "~*", "+@all", "resetchannels",
			"&{"+ns+":*}:wake*").Err())
		require.NoError(t, c.Close())
	}
	o := s.FailoverOptions()
	o.Username, o.Password = "worker", "pw"
	w, err := queue.New(s.NewClient(t, o), queue.Config{Namespace: ns})
	require.NoError(t, err)
	started := newJobStarts()
	log, logs := observedLogger(t)
	startRuntime(t, w, started.mux(), runtime.Config{Concurrency: 2, PollInterval: 30 * time.Second, Logger: log})
	primary, err := s.Primary(ctx)
	require.NoError(t, err)
	wake := store.Of(w).WakeChannel()
	require.Eventually(t, func() bool { return numSub(ctx, primary, wake) == 1 }, 10*time.Second, 5*time.Millisecond,
		"no wake-up subscription")
	require.Equal(t, 1, logs.FilterMessageSnippet("the ACL refuses the sentinels' hello channel").Len())
	require.Zero(t, logs.FilterMessageSnippet("the ACL refuses the subscription check channel").Len())

	pc := redis.NewClient(&redis.Options{Addr: primary})
	t.Cleanup(func() { _ = pc.Close() })
	producer, err := queue.New(pc, queue.Config{Namespace: ns})
	require.NoError(t, err)
	started.requireWoken(t, ctx, producer)
}
