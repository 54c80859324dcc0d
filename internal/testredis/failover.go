package testredis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
)

// Failover makes the replica of master (one of Addrs, of a cluster of
// StartClusterWithReplicas) its master the way an operator's switchover
// does, CLUSTER FAILOVER on the replica (the master stops its clients, the
// replica catches up and takes over the slots), and waits until it
// reports itself master and every node the cluster ok. It returns the new
// master's address.
func (c *Cluster) Failover(ctx context.Context, master string) (string, error) {
	i := slices.Index(c.addrs, master)
	if i < 0 || i >= len(c.replicas) {
		return "", fmt.Errorf("testredis: %s is no master with a replica (StartClusterWithReplicas)", master)
	}
	addr := c.replicas[i]
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	if err := rc.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		return "", fmt.Errorf("testredis: CLUSTER FAILOVER on %s: %w", addr, err)
	}
	for !redisproc.IsMaster(ctx, addr) {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("testredis: failover to %s: %w", addr, ctx.Err())
		case <-time.After(50 * time.Millisecond): // polling the switchover
		}
	}
	if err := c.rc.WaitOK(ctx); err != nil {
		return "", fmt.Errorf("testredis: failover to %s: %w", addr, err)
	}
	return addr, nil
}
