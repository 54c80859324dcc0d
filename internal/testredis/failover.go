package testredis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failover makes the replica of master i (StartClusterWithReplicas) its
// master the way an operator's switchover does, CLUSTER FAILOVER on the
// replica (the master stops its clients, the replica catches up and takes
// over the slots), and waits until it reports itself master and every
// node the cluster ok. It returns the new master's address.
func (c *Cluster) Failover(ctx context.Context, i int) (string, error) {
	if i >= len(c.replicas) {
		return "", fmt.Errorf("testredis: master %d has no replica (StartClusterWithReplicas)", i)
	}
	addr := c.replicas[i]
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	if err := rc.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		return "", fmt.Errorf("testredis: CLUSTER FAILOVER on %s: %w", addr, err)
	}
	for {
		role, err := rc.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" && c.allOK(ctx) {
			return addr, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("testredis: failover to %s: %w (role %v, %v)", addr, ctx.Err(), role, err)
		case <-time.After(50 * time.Millisecond): // polling the switchover
		}
	}
}

// allOK reports whether every node, masters and replicas, says
// cluster_state:ok.
func (c *Cluster) allOK(ctx context.Context) bool {
	for _, a := range append(c.Addrs(), c.replicas...) {
		n := redis.NewClient(&redis.Options{Addr: a})
		info, err := n.ClusterInfo(ctx).Result()
		_ = n.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	return true
}
