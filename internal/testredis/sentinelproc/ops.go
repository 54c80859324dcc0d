package sentinelproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
)

// SentinelAddrs are the sentinels' host:port.
func (g *Group) SentinelAddrs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, len(g.sentinels))
	for i, s := range g.sentinels {
		out[i] = s.Addr()
	}
	return out
}

// NodeAddrs are the data nodes' host:port, the first primary at start first.
func (g *Group) NodeAddrs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, len(g.nodes))
	for i, s := range g.nodes {
		out[i] = s.Addr()
	}
	return out
}

// FailoverOptions are what a go-redis FailoverClient of the group needs:
// the master name and the sentinels' addresses. The caller may set more
// fields (timeouts, retries) before redis.NewFailoverClient.
func (g *Group) FailoverOptions() *redis.FailoverOptions {
	return &redis.FailoverOptions{MasterName: MasterName, SentinelAddrs: g.SentinelAddrs()}
}

// UniversalOptions are FailoverOptions in the form of redis.NewUniversalClient,
// which returns a FailoverClient when MasterName is set.
func (g *Group) UniversalOptions() *redis.UniversalOptions {
	return &redis.UniversalOptions{MasterName: MasterName, Addrs: g.SentinelAddrs()}
}

// Primary returns the primary's address as the first sentinel that answers
// reports it.
func (g *Group) Primary(ctx context.Context) (string, error) {
	var errs []error
	for _, a := range g.SentinelAddrs() {
		c := redis.NewSentinelClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: time.Second})
		hp, err := c.GetMasterAddrByName(ctx, MasterName).Result()
		_ = c.Close()
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1]), nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("%w: %w", ErrNoPrimary, errors.Join(errs...))
}

// node returns the data node listening on addr.
func (g *Group) node(addr string) (*redisproc.Server, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.nodes {
		if n.Addr() == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("sentinelproc: no data node on %s", addr)
}

// KillPrimary SIGKILLs the current primary, as a crash would, and returns
// its address and the moment it was killed (after the process exited).
func (g *Group) KillPrimary(ctx context.Context) (addr string, at time.Time, err error) {
	if addr, err = g.Primary(ctx); err != nil {
		return "", time.Time{}, err
	}
	n, err := g.node(addr)
	if err != nil {
		return "", time.Time{}, err
	}
	if err := n.Kill(); err != nil {
		return "", time.Time{}, err
	}
	return addr, time.Now(), nil
}

// WaitFailover waits until a sentinel reports a primary other than old and
// that node answers ROLE as a master, and returns its address and when the
// sentinel first reported it (the promotion). It polls every 10 ms.
func (g *Group) WaitFailover(ctx context.Context, old string) (addr string, at time.Time, err error) {
	for {
		if a, err := g.Primary(ctx); err == nil && a != old {
			if at.IsZero() {
				at = time.Now()
			}
			if redisproc.IsMaster(ctx, a) {
				return a, at, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", time.Time{}, fmt.Errorf("sentinelproc: no failover from %s: %w", old, ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling the sentinels
		}
	}
}

// Rejoin starts the data node on addr again, as a killed old primary
// coming back with its append-only file, and makes it a replica of the
// current primary at once with REPLICAOF (the sentinels would do the same,
// but only once their next INFO, sent every 10 s, shows it back). It
// first waits until every sentinel names the new primary: a client that
// asks a sentinel still naming addr would write to the restarted node,
// which is a primary until REPLICAOF, and lose those writes. WaitReplicas
// waits until it is in sync.
func (g *Group) Rejoin(ctx context.Context, addr string) error {
	n, err := g.node(addr)
	if err != nil {
		return err
	}
	primary, err := g.agreedPrimary(ctx)
	if err != nil {
		return err
	}
	if primary == addr {
		return fmt.Errorf("sentinelproc: %s is still the primary", addr)
	}
	if err := n.Restart(); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(primary)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	return c.ReplicaOf(ctx, host, port).Err()
}

// Failover makes the sentinels promote a replica while the primary still
// runs (SENTINEL FAILOVER, as an operator's switchover would, or a
// fail-back to a primary that has just rejoined as a replica), and
// returns the old primary, the new one and when a sentinel first named
// it (as WaitFailover). It retries while no replica is fit yet (a
// sentinel refuses with NOGOODSLAVE until its INFO shows the replica in
// sync) or another failover is under way (INPROG). The old primary stays
// a primary, and keeps its clients, until the sentinels make it a replica
// (some 10 s later, with CLIENT KILL TYPE normal and pubsub).
func (g *Group) Failover(ctx context.Context) (old, primary string, at time.Time, err error) {
	if old, err = g.agreedPrimary(ctx); err != nil {
		return "", "", time.Time{}, err
	}
	for {
		err = g.forceFailover(ctx)
		if err == nil {
			break
		}
		if !redis.HasErrorPrefix(err, "NOGOODSLAVE") && !redis.HasErrorPrefix(err, "INPROG") {
			return "", "", time.Time{}, fmt.Errorf("sentinelproc: SENTINEL FAILOVER: %w", err)
		}
		select {
		case <-ctx.Done():
			return "", "", time.Time{}, fmt.Errorf("sentinelproc: SENTINEL FAILOVER: %w (last: %w)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond): // until a sentinel sees the replica fit
		}
	}
	primary, at, err = g.WaitFailover(ctx, old)
	return old, primary, at, err
}

// forceFailover sends SENTINEL FAILOVER to the first sentinel.
func (g *Group) forceFailover(ctx context.Context) error {
	c := redis.NewSentinelClient(&redis.Options{Addr: g.SentinelAddrs()[0], MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	return c.Failover(ctx, MasterName).Err()
}

// agreedPrimary waits until every sentinel names the same primary, and
// returns it.
func (g *Group) agreedPrimary(ctx context.Context) (string, error) {
	for {
		seen := map[string]bool{}
		for _, a := range g.SentinelAddrs() {
			c := redis.NewSentinelClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: time.Second})
			hp, err := c.GetMasterAddrByName(ctx, MasterName).Result()
			_ = c.Close()
			if err != nil || len(hp) != 2 {
				seen["?"] = true
				continue
			}
			seen[net.JoinHostPort(hp[0], hp[1])] = true
		}
		if len(seen) == 1 && !seen["?"] {
			for p := range seen {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w: the sentinels disagree (%v): %w", ErrNoPrimary, seen, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling the sentinels
		}
	}
}

// WaitReplicas waits until the current primary reports n connected
// replicas in sync (state=online in INFO replication).
func (g *Group) WaitReplicas(ctx context.Context, n int) error {
	var last string
	for {
		if p, err := g.Primary(ctx); err == nil {
			c := redis.NewClient(&redis.Options{Addr: p, MaxRetries: -1, DialTimeout: time.Second})
			info, err := c.Info(ctx, "replication").Result()
			_ = c.Close()
			if err == nil && strings.Count(info, "state=online") >= n {
				return nil
			}
			last = fmt.Sprintf("primary %s: %v\n%s", p, err, info)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinelproc: waiting for %d replicas: %w; last: %s", n, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond): // polling the primary
		}
	}
}

// Close stops every process of the group (SIGKILL: nothing is left to
// save) and removes the directory if Start created it.
func (g *Group) Close() error {
	g.mu.Lock()
	all := append(append([]*redisproc.Server(nil), g.sentinels...), g.nodes...)
	g.mu.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, s.Kill())
	}
	if g.ownDir {
		errs = append(errs, os.RemoveAll(g.dir))
	}
	return errors.Join(errs...)
}
