package queue

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

			// The queue's keys are all on the node its hash tag maps to.
			node := redis.NewClient(&redis.Options{Addr: addr})
			defer node.Close()
			// (The fleet's busy hash is gone: every worker left and released
			// its leases.)
			for _, k := range []string{e.c.keys.task("c"), e.c.keys.dead(), e.c.keys.counts()} {
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
	_, err := e.c.EnqueueBatch(e.ctx, []*Task{{ID: "b", Type: "t", Level: 2}, {ID: "c", Type: "t", Level: 1}})
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

	// Finish every way.
	require.NoError(t, e.c.Ack(e.ctx, got[0]))
	require.NoError(t, e.c.Ack(e.ctx, u))
	require.NoError(t, e.c.Retry(e.ctx, got[1], e.clk.Now(), "boom"))
	requireLeaseLost(t, e.c.Ack(e.ctx, got[1]))

	// Expiry and recovery; the scheduled task comes due.
	e.clk.Advance(time.Minute)
	got = e.lease("w1", 3)
	require.Equal(t, []string{"c", "a", "later"}, ids(got))
	require.Equal(t, []byte("cp"), got[0].Checkpoint)
	require.Equal(t, 1, got[1].Preemptions)
	require.NoError(t, e.c.Kill(e.ctx, got[0], "bad"))
	require.NoError(t, e.c.Ack(e.ctx, got[2]))
	dead, err := e.c.DeadTasks(e.ctx, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, ids(dead))
	e.requireCounts(counts{Active: 1}, counts{Dead: 1})

	e.clk.Advance(DefaultLeaseDuration)
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
