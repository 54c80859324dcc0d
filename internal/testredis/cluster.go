package testredis

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
)

const clusterTimeout = 60 * time.Second

// Cluster is a three-master Redis Cluster owned by one test.
type Cluster struct {
	addrs  []string
	client *redis.ClusterClient
}

// StartCluster starts three redis-server nodes with cluster-enabled yes on
// free 127.0.0.1 ports (whose bus ports, port+10000, are free too), joins them
// with `redis-cli --cluster create --cluster-replicas 0`, and waits until
// every node reports cluster_state:ok. The nodes are killed at t.Cleanup. It
// skips the test if redis-server or redis-cli is not installed, or in -short
// mode.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("testredis: skipping in -short mode: needs a real Redis Cluster")
	}
	bins, err := lookRedis("redis-server", "redis-cli")
	if err != nil {
		t.Skipf("testredis: skipping, needs a real Redis Cluster: %v", err)
	}
	dir := t.TempDir()
	c := &Cluster{}
	for i := range 3 {
		n, err := redisproc.Start(redisproc.Options{Bin: bins["redis-server"], Cluster: true,
			Dir: filepath.Join(dir, fmt.Sprintf("node-%d", i)), Args: []string{"--cluster-node-timeout", "5000"}})
		if err != nil {
			t.Fatalf("testredis: cluster node %d: %v", i, err)
		}
		t.Cleanup(func() { _ = n.Kill() })
		c.addrs = append(c.addrs, n.Addr())
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	create := append([]string{"--cluster", "create"}, c.addrs...)
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.CommandContext(ctx, bins["redis-cli"], create...).CombinedOutput()
	if err != nil {
		t.Fatalf("testredis: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.waitOK(ctx); err != nil {
		t.Fatalf("testredis: %v", err)
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

// waitOK polls CLUSTER INFO on every node until all report cluster_state:ok
// with all 16384 slots assigned and three known nodes.
func (c *Cluster) waitOK(ctx context.Context) error {
	nodes := make([]*redis.Client, len(c.addrs))
	for i, a := range c.addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: a})
		defer nodes[i].Close()
	}
	var last string
	for {
		ok := true
		for _, n := range nodes {
			info, err := n.ClusterInfo(ctx).Result()
			if err != nil {
				last, ok = err.Error(), false
				break
			}
			if !strings.Contains(info, "cluster_state:ok") ||
				!strings.Contains(info, "cluster_slots_ok:16384") ||
				!strings.Contains(info, "cluster_known_nodes:3") {
				last, ok = info, false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %v not ok within %s; last CLUSTER INFO:\n%s", c.addrs, clusterTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
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
