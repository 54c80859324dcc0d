package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// TestCluster runs the queue on a real three-master Redis Cluster, with two
// queues whose hash tags live on different nodes: every script and pipeline
// must touch one slot, or the cluster refuses it (CROSSSLOT) or redirects it
// (MOVED) to a node that lacks the other keys.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Redis Cluster")
	}
	t.Parallel()
	cl := testredis.StartCluster(t)
	cc, ok := cl.Client().(*redis.ClusterClient)
	require.True(t, ok, "cluster client is %T", cl.Client())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)

	var b [4]byte
	_, _ = rand.Read(b[:])
	ns := "cl" + hex.EncodeToString(b[:])
	nodes := map[string]string{} // node address -> queue name
	for i := 0; len(nodes) < 2 && i < 200; i++ {
		name := fmt.Sprint("q", i)
		master, err := cc.MasterForKey(ctx, newKeys(ns, name).leases())
		require.NoError(t, err)
		if _, seen := nodes[master.Options().Addr]; !seen {
			nodes[master.Options().Addr] = name
		}
	}
	require.Len(t, nodes, 2, "two queues on different nodes")

	for addr, name := range nodes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnvOn(t, cc, ns, func(c *Config) { c.Name = name })
			clusterScenario(t, e)
			clusterPatternScenario(t, e)
			clusterUniqueScenario(t, e)
			clusterPeriodicScenario(t, e)

			// The queue's keys are all on the node its hash tag maps to.
			node := redis.NewClient(&redis.Options{Addr: addr})
			defer node.Close()
			// (The fleet's busy hash is gone: every worker left and released
			// its leases.)
			for _, k := range []string{e.c.keys.task("c"), e.c.keys.result("b"), e.c.keys.dead(), e.c.keys.counts(), e.c.keys.prefix + "feed"} {
				n, err := node.Exists(e.ctx, k).Result()
				require.NoError(t, err)
				require.Equal(t, int64(1), n, "key %s on the queue's node %s", k, addr)
			}
			require.Zero(t, node.Exists(e.ctx, e.c.keys.busy()).Val())
		})
	}
}

func clusterScenario(t *testing.T, e *env) {
	// Enqueue, batch, scheduled.
	e.enqueue("", ID("a"), Level(0))
	_, err := e.c.EnqueueBatch(e.ctx, []*Task{{Info: Info{ID: "b", Type: "t", Level: 2}}, {Info: Info{ID: "c", Type: "t", Level: 1}}})
	require.NoError(t, err)
	e.enqueue("", ID("later"), ProcessIn(time.Minute))
	_, err = e.c.Enqueue(e.ctx, NewTask("t", nil), ID("a"))
	require.ErrorIs(t, err, ErrDuplicateTask)
	depths, err := e.c.Depths(e.ctx)
	require.NoError(t, err)
	require.Equal(t, map[int]int64{0: 1, 1: 1, 2: 1}, depths)
	e.requireCounts(counts{Pending: 1, Scheduled: 1}, counts{Pending: 1}, counts{Pending: 1})

	// Lease in order, heartbeat, checkpoint.
	got := e.lease("w1", 2)
	require.Equal(t, []string{"b", "c"}, ids(got))
	e.beat("w1", 2, 0, got...)
	_, err = e.c.SaveCheckpoint(e.ctx, "c", got[1].Token, []byte("cp"))
	require.NoError(t, err)
	require.Equal(t, int64(1), e.stats().Workers)

	// Reserve: w2 is saturated running "a" (level 0), nothing lower elsewhere.
	a := e.leaseOne("w2")
	e.beat("w2", 1, 0, a)
	e.enqueue("", ID("urgent"), Level(2))
	u, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w2", VictimID: "a", VictimLevel: 0, MinLevel: 1, MaxPreemptions: -1})
	require.NoError(t, err)
	require.Equal(t, "urgent", u.ID)
	require.NoError(t, e.c.Requeue(e.ctx, a, RequeuePreempted))

	// Finish every way; "b" leaves a result behind its record.
	require.NoError(t, e.c.SaveResult(e.ctx, &got[0].Info, got[0].Token, []byte("ok")))
	require.NoError(t, e.c.Ack(e.ctx, got[0]))
	require.Equal(t, []byte("ok"), e.inspect("b").Result)
	require.NoError(t, e.c.Ack(e.ctx, u))
	require.NoError(t, e.c.Retry(e.ctx, got[1], e.clk.Now(), "boom"))
	requireLeaseLost(t, e.c.Ack(e.ctx, got[1]))

	// Expiry and recovery; the scheduled task comes due.
	e.clk.Advance(time.Minute)
	got = e.lease("w1", 3)
	require.Equal(t, []string{"c", "a", "later"}, ids(got))
	require.Equal(t, []byte("cp"), got[0].Checkpoint)
	require.Equal(t, 1, got[1].Preemptions)
	require.NoError(t, e.c.DeadLetter(e.ctx, got[0], "bad"))
	require.NoError(t, e.c.Ack(e.ctx, got[2]))
	dead, err := e.c.DeadTasks(e.ctx, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, ids(dead))
	e.requireCounts(counts{Active: 1}, counts{Dead: 1})

	e.clk.Advance(defaultLeaseDuration)
	rec := e.leaseOne("w3")
	require.Equal(t, "a", rec.ID)
	require.Equal(t, 1, rec.Recoveries)
	requireLeaseLost(t, e.c.Ack(e.ctx, got[1]))
	e.beat("w3", 1, 0, rec)
	require.NoError(t, e.c.Ack(e.ctx, rec))
	require.NoError(t, e.c.Deregister(e.ctx, "w3"))
	require.Zero(t, e.stats().Workers)
	e.requireCounts(counts{}, counts{Dead: 1})
}

// clusterPatternScenario runs pausing, pool lease groups and layouts, rates
// and the preemption feed on the cluster (after clusterScenario, whose
// preemption of "a" is in the feed).
func clusterPatternScenario(t *testing.T, e *env) {
	evs, err := e.c.Preemptions(e.ctx, "", 10)
	require.NoError(t, err)
	require.Len(t, evs, 4) // "a" resumed on w1, whose lease expired, then on w3
	require.Equal(t, []FeedKind{FeedPreempt, FeedGaveWay, FeedResumed, FeedResumed},
		[]FeedKind{evs[0].Kind, evs[1].Kind, evs[2].Kind, evs[3].Kind})

	require.NoError(t, e.c.Pause(e.ctx, 0, PauseWait))
	e.enqueue("", ID("p0"), Level(0))
	e.enqueue("", ID("p1"), Level(1))
	e.enqueue("", ID("p2"), Level(2))
	res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "pw", Groups: []LeaseGroup{
		{Levels: []int{2}, Count: 1, Pool: 1}, {Levels: []int{0, 1}, Count: 2, Pool: 2}}})
	require.NoError(t, err)
	require.Equal(t, []string{"p2", "p1"}, ids(res.Tasks), "level 0 is paused")
	require.Equal(t, []int{1, 1}, res.GroupCounts)
	_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "pw", Capacity: 3, Leases: res.Tasks,
		Pools:      []PoolLayout{{Pool: 1, Name: "high", Size: 1, Levels: []int{2}}, {Pool: 2, Name: "bulk", Size: 2, Levels: []int{0, 1}}},
		Counts:     map[int]LevelCounts{2: {Processed: 6}},
		PoolCounts: map[string]LevelCounts{"high": {Processed: 6}}})
	require.NoError(t, err)
	ws, err := e.c.Workers(e.ctx)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.Equal(t, []int{1, 1}, []int{ws[0].Pools[0].Busy, ws[0].Pools[1].Busy})
	for _, tk := range res.Tasks {
		require.NoError(t, e.c.Ack(e.ctx, tk))
	}
	require.NoError(t, e.c.Resume(e.ctx, AllLevels))
	p0 := e.leaseOne("pw")
	require.Equal(t, "p0", p0.ID)
	require.NoError(t, e.c.Ack(e.ctx, p0))
	require.NoError(t, e.c.Deregister(e.ctx, "pw"))
	e.clk.Advance(2 * rateBucket)
	st := e.stats()
	require.Equal(t, 6/RateWindow.Seconds(), st.Levels[2].Rates.Processed)
	require.Equal(t, 6/RateWindow.Seconds(), st.PoolRates["high"].Processed)
}
