package redisproc_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/redisproc"
)

func TestStartClusterJoinsAndCloses(t *testing.T) {
	needRedis(t)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skipf("needs redis-cli: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Args: []string{"--cluster-node-timeout", "5000"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	addrs := c.Addrs()
	require.Len(t, addrs, 3)
	require.Len(t, c.Nodes(), 3)
	for _, a := range addrs {
		n := redis.NewClient(&redis.Options{Addr: a})
		info, err := n.ClusterInfo(ctx).Result()
		_ = n.Close()
		require.NoError(t, err)
		assert.Contains(t, info, "cluster_state:ok")
		assert.Contains(t, info, "cluster_known_nodes:3")
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	require.NoError(t, cc.Set(ctx, "{a}k", 1, 0).Err())
	require.NoError(t, cc.Set(ctx, "{b}k", 2, 0).Err())

	dir := c.Nodes()[0].Dir()
	require.NoError(t, c.Close())
	for _, a := range addrs {
		assert.Error(t, redisproc.Ping(a), "a closed cluster's node does not answer")
	}
	assert.NoDirExists(t, dir, "Close removes the directory StartCluster made")
}

func TestStartClusterFailures(t *testing.T) {
	ctx := context.Background()
	_, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Cli: "no-such-redis-cli"})
	require.ErrorIs(t, err, exec.ErrNotFound)
	_, err = redisproc.StartCluster(ctx, redisproc.ClusterOptions{Masters: 2})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at least 3 masters")
}

// TestStartClusterReplicas: with Replicas 1 each master gets a replica
// whose link is up, every node knows the six, and Close stops them all.
func TestStartClusterReplicas(t *testing.T) {
	needRedis(t)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skipf("needs redis-cli: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Args: []string{"--cluster-node-timeout", "5000"},
		Replicas: 1})
	require.NoError(t, err)
	require.Len(t, c.Replicas(), 3)
	for i, r := range c.Replicas() {
		n := redis.NewClient(&redis.Options{Addr: r.Addr()})
		info, err := n.Info(ctx, "replication").Result()
		require.NoError(t, err)
		assert.Contains(t, info, "role:slave", "replica %d", i)
		assert.Contains(t, info, "master_port:"+strings.Split(c.Addrs()[i], ":")[1], "replica %d follows master %d", i, i)
		ci, err := n.ClusterInfo(ctx).Result()
		require.NoError(t, err)
		assert.Contains(t, ci, "cluster_known_nodes:6")
		_ = n.Close()
	}
	require.NoError(t, c.Close())
	for _, r := range c.Replicas() {
		n := redis.NewClient(&redis.Options{Addr: r.Addr()})
		assert.Error(t, n.Ping(ctx).Err(), "replica %s stopped", r.Addr())
		_ = n.Close()
	}
}
