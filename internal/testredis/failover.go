package testredis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
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
