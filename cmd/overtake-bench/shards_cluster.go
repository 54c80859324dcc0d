package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
)

// shardCluster is the Redis Cluster the shard section measures: its
// masters, a client of each (for INFO, never for the queue's traffic),
// and the cluster it started, if any.
type shardCluster struct {
	source  string   // "started" or "given"
	masters []string // master addresses, by their first slot
	slots   []string // each master's slot ranges, "0-5460"
	ranges  [][]slotRange
	nodes   []*redis.Client
	proc    *redisproc.Cluster // nil when given with --cluster
	opts    options
}

// openCluster starts a 3-master cluster on 127.0.0.1, or connects to the
// one --cluster names, and finds its masters from CLUSTER SHARDS.
func openCluster(ctx context.Context, o options) (*shardCluster, error) {
	c := &shardCluster{source: "given", opts: o}
	seeds := splitList(o.cluster)
	if len(seeds) == 0 {
		progress("shards: starting a 3-master Redis Cluster on 127.0.0.1")
		rc, err := redisproc.StartCluster(ctx, redisproc.ClusterOptions{Bin: o.redisServer,
			Lifetime: o.timeout + time.Minute, Args: []string{"--loglevel", "warning", "--cluster-node-timeout", "5000"}})
		if err != nil {
			return nil, err
		}
		c.source, c.proc, seeds = "started", rc, rc.Addrs()
	}
	cc := c.newClient(seeds)
	defer cc.Close()
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		c.close()
		return nil, fmt.Errorf("cluster %v: %w", seeds, err)
	}
	ranges := map[string][]slotRange{}
	for _, sh := range sortedShards(shards) {
		for _, n := range sh.Nodes {
			if n.Role != "master" || len(sh.Slots) == 0 {
				continue
			}
			a := net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
			c.masters = append(c.masters, a)
			for _, r := range sh.Slots {
				ranges[a] = append(ranges[a], slotRange{int(r.Start), int(r.End)})
			}
		}
	}
	for _, a := range c.masters {
		var text []string
		for _, r := range ranges[a] {
			text = append(text, fmt.Sprintf("%d-%d", r.start, r.end))
		}
		c.slots, c.ranges = append(c.slots, strings.Join(text, ",")), append(c.ranges, ranges[a])
		c.nodes = append(c.nodes, redis.NewClient(&redis.Options{Addr: a}))
	}
	if len(c.masters) == 0 {
		c.close()
		return nil, fmt.Errorf("cluster %v has no master with slots", seeds)
	}
	return c, nil
}

// sortedShards returns the shards by their first slot (CLUSTER SHARDS
// lists them in no set order).
func sortedShards(s []redis.ClusterShard) []redis.ClusterShard {
	first := func(sh redis.ClusterShard) int64 {
		if len(sh.Slots) == 0 {
			return math.MaxInt64
		}
		return slices.MinFunc(sh.Slots, func(a, b redis.SlotRange) int { return cmp.Compare(a.Start, b.Start) }).Start
	}
	out := slices.Clone(s)
	slices.SortFunc(out, func(a, b redis.ClusterShard) int { return cmp.Compare(first(a), first(b)) })
	return out
}

// newClient returns a cluster client with the options every figure uses.
func (c *shardCluster) newClient(addrs []string) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: c.opts.poolSize, Protocol: c.opts.protocol})
}

// close closes the INFO clients and stops a cluster openCluster started.
func (c *shardCluster) close() {
	for _, n := range c.nodes {
		_ = n.Close()
	}
	if c.proc != nil {
		if err := c.proc.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "warning: stopping the cluster:", err)
		}
	}
}

// nodeStat is one master's INFO counters at one moment.
type nodeStat struct {
	cpu  time.Duration // used_cpu_user + used_cpu_sys
	cmds int64         // total_commands_processed, commands inside scripts included
}

// stats reads every master's CPU time and commands processed.
func (c *shardCluster) stats(ctx context.Context) ([]nodeStat, error) {
	out := make([]nodeStat, len(c.nodes))
	for i, n := range c.nodes {
		info, err := n.InfoMap(ctx, "cpu", "stats").Result()
		if err != nil {
			return nil, fmt.Errorf("INFO of %s: %w", c.masters[i], err)
		}
		var sum float64
		for _, k := range []string{"used_cpu_user", "used_cpu_sys"} {
			v, err := strconv.ParseFloat(info["CPU"][k], 64)
			if err != nil {
				return nil, fmt.Errorf("INFO cpu of %s: %s: %w", c.masters[i], k, err)
			}
			sum += v
		}
		cmds, err := strconv.ParseInt(info["Stats"]["total_commands_processed"], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("INFO stats of %s: %w", c.masters[i], err)
		}
		out[i] = nodeStat{cpu: time.Duration(sum * float64(time.Second)), cmds: cmds}
	}
	return out, nil
}

// tags counts, on each master, the distinct hash tags ({...}) of queue
// name's keys in namespace ns: where the queue's shards live.
func (c *shardCluster) tags(ctx context.Context, ns, name string) ([]int, error) {
	out := make([]int, len(c.nodes))
	for i, n := range c.nodes {
		seen := map[string]bool{}
		iter := n.Scan(ctx, 0, "*"+ns+":"+name+"[}:]*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			if open := strings.IndexByte(k, '{'); open >= 0 {
				if end := strings.IndexByte(k[open:], '}'); end > 0 {
					seen[k[open+1:open+end]] = true
				}
			}
		}
		if err := iter.Err(); err != nil {
			return nil, err
		}
		out[i] = len(seen)
	}
	return out, nil
}

// deleteAll removes every key that contains sub from every master, one
// key a command (a master refuses a multi-key UNLINK across slots).
func (c *shardCluster) deleteAll(ctx context.Context, sub string) error {
	var errs []error
	for _, n := range c.nodes {
		iter := n.Scan(ctx, 0, "*"+sub+"*", 1000).Iterator()
		pipe := n.Pipeline()
		for iter.Next(ctx) {
			pipe.Unlink(ctx, iter.Val())
			if pipe.Len() == 500 {
				_, err := pipe.Exec(ctx)
				errs = append(errs, err)
			}
		}
		_, err := pipe.Exec(ctx) // an empty pipeline does nothing
		errs = append(errs, iter.Err(), err)
	}
	return errors.Join(errs...)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
