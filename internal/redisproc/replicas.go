package redisproc

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// addReplicas starts opts.Replicas nodes per master and makes each a
// replica of its master (CLUSTER MEET, then CLUSTER REPLICATE), then waits
// until every replica's link to its master is up and every node knows
// every other (waitOK).
func (c *Cluster) addReplicas(ctx context.Context, opts ClusterOptions) error {
	if opts.Replicas <= 0 {
		return nil
	}
	seed := c.nodes[0]
	for i, m := range c.nodes {
		id, err := nodeID(ctx, m.Addr())
		if err != nil {
			return err
		}
		for j := range opts.Replicas {
			n, err := Start(Options{Bin: opts.Bin, Cluster: true, Args: opts.Args, Lifetime: opts.Lifetime,
				Dir: filepath.Join(c.dir, fmt.Sprintf("node-%d-replica-%d", i, j))})
			if err != nil {
				return fmt.Errorf("redisproc: replica %d of master %d: %w", j, i, err)
			}
			c.replicas = append(c.replicas, n)
			if err := c.attach(ctx, n, seed, id); err != nil {
				return err
			}
		}
	}
	if err := c.waitOK(ctx); err != nil {
		return err
	}
	for _, r := range c.replicas {
		if err := waitLinkUp(ctx, r.Addr()); err != nil {
			return err
		}
	}
	return nil
}

// attach makes n a replica of master id: it meets the cluster through
// seed, then, once it knows the master, replicates it.
func (c *Cluster) attach(ctx context.Context, n, seed *Server, id string) error {
	rc := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer rc.Close()
	host, port, _ := strings.Cut(seed.Addr(), ":")
	if err := rc.Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
		return fmt.Errorf("redisproc: CLUSTER MEET from %s: %w", n.Addr(), err)
	}
	for {
		err := rc.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisproc: CLUSTER REPLICATE %s on %s: %w (last: %v)", id, n.Addr(), ctx.Err(), err)
		case <-time.After(100 * time.Millisecond): // until gossip brings the master
		}
	}
}

// nodeID is the cluster node ID of the node at addr.
func nodeID(ctx context.Context, addr string) (string, error) {
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	id, err := rc.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return "", fmt.Errorf("redisproc: CLUSTER MYID on %s: %w", addr, err)
	}
	return id, nil
}

// waitLinkUp waits until the replica at addr is in sync (ReplicaInSync).
func waitLinkUp(ctx context.Context, addr string) error {
	var last string
	for {
		ok, why := ReplicaInSync(ctx, addr)
		if ok {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisproc: replica %s: %w; last: %s", addr, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond): // polling the replication link
		}
	}
}

// ReplicaInSync reports whether the replica at addr has its link to its
// master up and no sync in progress, and if not, why.
func ReplicaInSync(ctx context.Context, addr string) (bool, string) {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	info, err := rc.Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "master_link_status:up") || !strings.Contains(info, "master_sync_in_progress:0") {
		return false, fmt.Sprintf("replica %s not in sync (%v)", addr, err)
	}
	return true, ""
}

// IsMaster reports whether the server at addr answers ROLE as a master.
func IsMaster(ctx context.Context, addr string) bool {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rc.Close()
	role, err := rc.Do(ctx, "ROLE").Slice()
	return err == nil && len(role) > 0 && role[0] == "master"
}

// WaitOK waits until every node, replicas included, reports the cluster
// ok with all slots assigned (as StartCluster does before it returns), for
// a caller that changed the cluster since (a failover, say).
func (c *Cluster) WaitOK(ctx context.Context) error { return c.waitOK(ctx) }

// Replicas are the replicas' servers, ClusterOptions.Replicas per master
// in the masters' order.
func (c *Cluster) Replicas() []*Server { return append([]*Server(nil), c.replicas...) }

// all is every node, masters first.
func (c *Cluster) all() []*Server { return append(c.Nodes(), c.replicas...) }
