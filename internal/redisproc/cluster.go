package redisproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultClusterTimeout bounds the join of a cluster (redis-cli --cluster
// create and the wait for cluster_state:ok) when the context given to
// StartCluster has no earlier deadline.
const DefaultClusterTimeout = 60 * time.Second

// ClusterOptions configure StartCluster. The zero value starts three
// masters with redis-server and redis-cli from PATH, in a new temporary
// directory.
type ClusterOptions struct {
	// Bin is the redis-server binary, as in Options ("" means
	// "redis-server").
	Bin string
	// Cli is the redis-cli binary that joins the nodes, a path or a name
	// looked up on PATH ("" means "redis-cli").
	Cli string
	// Dir holds each node's data directory, node-0, node-1, ... "" means a
	// new temporary directory, which Close removes.
	Dir string
	// Masters is the number of masters, at least 3 (redis-cli's minimum);
	// 0 means 3.
	Masters int
	// Args are extra redis-server arguments of every node, e.g.
	// {"--cluster-node-timeout", "5000"}.
	Args []string
	// Lifetime bounds the life of every node, as in Options.
	Lifetime time.Duration
	// Replicas is the number of replicas each master gets (0: none),
	// attached once the masters' cluster is ok (replicas.go).
	Replicas int
}

// Cluster is a Redis Cluster of masters, with replicas when asked,
// started by StartCluster, every node on 127.0.0.1.
type Cluster struct {
	nodes    []*Server
	replicas []*Server // ClusterOptions.Replicas per master, in the masters' order
	dir      string
	ownDir   bool
}

// StartCluster starts opts.Masters redis-server nodes with cluster-enabled
// yes on free 127.0.0.1 ports (whose bus ports, port+10000, are free
// too), joins them with `redis-cli --cluster create --cluster-replicas 0`,
// and returns once every node reports cluster_state:ok with all 16384
// slots assigned and every master known. The join is bounded by ctx and
// by DefaultClusterTimeout. On failure every node started is killed.
func StartCluster(ctx context.Context, opts ClusterOptions) (*Cluster, error) {
	masters := opts.Masters
	if masters == 0 {
		masters = 3
	}
	if masters < 3 {
		return nil, fmt.Errorf("redisproc: a cluster needs at least 3 masters, got %d", masters)
	}
	cli := opts.Cli
	if cli == "" {
		cli = "redis-cli"
	}
	cli, err := exec.LookPath(cli)
	if err != nil {
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	c := &Cluster{dir: opts.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "overtake-cluster-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultClusterTimeout)
	defer cancel()
	if err := c.start(ctx, cli, masters, opts); err != nil {
		_ = c.Kill()
		if c.ownDir {
			_ = os.RemoveAll(c.dir)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, cli string, masters int, opts ClusterOptions) error {
	for i := range masters {
		n, err := Start(Options{Bin: opts.Bin, Cluster: true, Dir: filepath.Join(c.dir, fmt.Sprintf("node-%d", i)),
			Args: opts.Args, Lifetime: opts.Lifetime})
		if err != nil {
			return fmt.Errorf("redisproc: cluster node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, n)
	}
	create := append([]string{"--cluster", "create"}, c.Addrs()...)
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, create...).CombinedOutput(); err != nil {
		return fmt.Errorf("redisproc: redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.waitOK(ctx); err != nil {
		return err
	}
	return c.addReplicas(ctx, opts)
}

// waitOK polls CLUSTER INFO on every node until all report cluster_state:ok
// with all 16384 slots assigned and every master known.
func (c *Cluster) waitOK(ctx context.Context) error {
	all := c.all()
	known := fmt.Sprintf("cluster_known_nodes:%d", len(all))
	clients := make([]*redis.Client, len(all))
	for i, n := range all {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr()})
		defer clients[i].Close()
	}
	var last string
	for {
		ok := true
		for _, n := range clients {
			info, err := n.ClusterInfo(ctx).Result()
			if err != nil {
				last, ok = err.Error(), false
				break
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") ||
				!strings.Contains(info, known) {
				last, ok = info, false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisproc: cluster %v not ok: %w; last CLUSTER INFO:\n%s", c.Addrs(), ctx.Err(), last)
		case <-time.After(100 * time.Millisecond): // polling the nodes' gossip
		}
	}
}

// Addrs are the host:port of the masters, in the order they were started.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes are the masters' servers, in the order they were started.
func (c *Cluster) Nodes() []*Server { return append([]*Server(nil), c.nodes...) }

// Kill kills every node as a crash would, keeping their data directories.
func (c *Cluster) Kill() error {
	var errs []error
	for _, n := range c.all() {
		errs = append(errs, n.Kill())
	}
	return errors.Join(errs...)
}

// Close stops every node for good (as Server.Close) and removes Dir, with
// the nodes' data, when StartCluster made it.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.all() {
		errs = append(errs, n.Close())
	}
	if c.ownDir {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}
