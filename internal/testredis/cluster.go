package testredis

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
)

// Cluster is a three-master Redis Cluster owned by one test.
type Cluster struct {
	addrs    []string
	replicas []string // StartClusterWithReplicas: the replica of each master in addrs
	rc       *redisproc.Cluster
	client   *redis.ClusterClient
}

// StartCluster starts three redis-server nodes with cluster-enabled yes on
// free 127.0.0.1 ports (whose bus ports, port+10000, are free too), joins them
// with `redis-cli --cluster create --cluster-replicas 0`, and waits until
// every node reports cluster_state:ok (redisproc.StartCluster). The nodes are
// killed at t.Cleanup. It skips the test if redis-server or redis-cli is not
// installed, or in -short mode.
func StartCluster(t testing.TB) *Cluster { t.Helper(); return startCluster(t, 0) }

// StartClusterWithReplicas is StartCluster with one replica per master
// (redisproc.ClusterOptions.Replicas), for failover tests (Failover).
func StartClusterWithReplicas(t testing.TB) *Cluster { t.Helper(); return startCluster(t, 1) }

func startCluster(t testing.TB, replicas int) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("testredis: skipping in -short mode: needs a real Redis Cluster")
	}
	bins, err := lookRedis("redis-server", "redis-cli")
	if err != nil {
		t.Skipf("testredis: skipping, needs a real Redis Cluster: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisproc.DefaultClusterTimeout)
	defer cancel()
	rc, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Bin: bins["redis-server"], Cli: bins["redis-cli"],
		Dir: t.TempDir(), Args: []string{"--cluster-node-timeout", "5000"}, Replicas: replicas})
	if err != nil {
		t.Fatalf("testredis: %v", err)
	}
	t.Cleanup(func() { _ = rc.Kill() })
	c := &Cluster{addrs: rc.Addrs(), rc: rc}
	for _, r := range rc.Replicas() {
		c.replicas = append(c.replicas, r.Addr())
	}
	c.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs})
	t.Cleanup(func() { _ = c.client.Close() })
	if err := c.client.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.Ping(ctx).Err()
	}); err != nil {
		t.Fatalf("testredis: cluster client: %v", err)
	}
	return c
}

// Addrs are the host:port of the three masters.
func (c *Cluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// Client is a cluster client of the three nodes, closed at t.Cleanup.
func (c *Cluster) Client() redis.UniversalClient { return c.client }

// NewClient opens another cluster client, closed at t.Cleanup.
func (c *Cluster) NewClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}
