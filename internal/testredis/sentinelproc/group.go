package sentinelproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
)

// MasterName is the name under which the sentinels monitor the primary.
const MasterName = "overtake"

// ErrNoPrimary is returned when the sentinels do not agree on a running
// primary of the group.
var ErrNoPrimary = errors.New("sentinelproc: no running primary")

// Options configure Start. The zero value starts one replica and three
// sentinels (quorum 2) from redis-server on PATH.
type Options struct {
	// Bin is the redis-server binary (a path or a name on PATH; "" means
	// redis-server). The sentinels run it as `Bin sentinel.conf --sentinel`.
	Bin string
	// Dir holds one directory per process; "" means a new temporary
	// directory, which Close removes.
	Dir string
	// Replicas is the number of replicas (default 1).
	Replicas int
	// Sentinels is the number of sentinels (default 3) and Quorum the number
	// that must agree that the primary is down (default a majority).
	Sentinels, Quorum int
	// DownAfter is the sentinels' down-after-milliseconds (default 1 s): how
	// long the primary must not answer before it is thought down. Below 1 s
	// (the sentinels' ping period) Redis 7.0's sentinels were seen to think a
	// just-promoted primary down too, and fail over again and again.
	DownAfter time.Duration
	// FailoverTimeout is the sentinels' failover-timeout (default 3 s).
	FailoverTimeout time.Duration
	// Lifetime bounds the life of every process, as redisproc.Options.Lifetime.
	Lifetime time.Duration
	// Args are extra redis-server arguments of the data nodes (primary and
	// replicas), after the others.
	Args []string
}

func (o Options) withDefaults() Options {
	if o.Bin == "" {
		o.Bin = "redis-server"
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Sentinels <= 0 {
		o.Sentinels = 3
	}
	if o.Quorum <= 0 {
		o.Quorum = o.Sentinels/2 + 1
	}
	if o.DownAfter <= 0 {
		o.DownAfter = time.Second
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = 3 * time.Second
	}
	return o
}

// Group is a primary, its replicas and the sentinels that watch them. Its
// methods are safe to call from any goroutine.
type Group struct {
	opts   Options
	dir    string
	ownDir bool

	mu        sync.Mutex
	nodes     []*redisproc.Server // data nodes: the first primary at start, then the replicas
	sentinels []*redisproc.Server
}

// dataArgs are the data nodes' arguments: AOF with fsync every second, and
// a diskless full sync without delay so that a replica (or a returning old
// primary) catches up at once.
func dataArgs(extra []string) []string {
	return append([]string{"--appendonly", "yes", "--appendfsync", "everysec",
		"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0", "--loglevel", "warning"}, extra...)
}

// Start starts the group and returns once the replicas are in sync and every
// sentinel sees the replicas and the other sentinels, or ctx ends. On error
// it stops whatever it started.
func Start(ctx context.Context, opts Options) (g *Group, err error) {
	opts = opts.withDefaults()
	bin, err := exec.LookPath(opts.Bin)
	if err != nil {
		return nil, fmt.Errorf("sentinelproc: %w", err)
	}
	g = &Group{opts: opts, dir: opts.Dir}
	if g.dir == "" {
		if g.dir, err = os.MkdirTemp("", "overtake-sentinel-"); err != nil {
			return nil, err
		}
		g.ownDir = true
	}
	made := g // a failing return sets g to nil before this defer runs
	defer func() {
		if err != nil {
			_ = made.Close()
		}
	}()
	start := func(name string, o redisproc.Options) (*redisproc.Server, error) {
		o.Dir, o.Lifetime = filepath.Join(g.dir, name), opts.Lifetime
		s, err := redisproc.Start(o)
		if err != nil {
			return nil, fmt.Errorf("sentinelproc: %s: %w", name, err)
		}
		return s, nil
	}
	primary, err := start("node-0", redisproc.Options{Bin: bin, Args: dataArgs(opts.Args)})
	g.add(&g.nodes, primary)
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(primary.Addr(), ":")
	for i := 1; i <= opts.Replicas; i++ {
		r, err := start(fmt.Sprintf("node-%d", i), redisproc.Options{Bin: bin,
			Args: dataArgs(append([]string{"--replicaof", host, port}, opts.Args...))})
		g.add(&g.nodes, r)
		if err != nil {
			return nil, err
		}
	}
	for i := range opts.Sentinels {
		dir := filepath.Join(g.dir, fmt.Sprintf("sentinel-%d", i))
		wrapper, err := sentinelWrapper(dir, bin, primary.Addr(), opts)
		if err != nil {
			return nil, err
		}
		s, err := start(fmt.Sprintf("sentinel-%d", i), redisproc.Options{Bin: wrapper})
		g.add(&g.sentinels, s)
		if err != nil {
			return nil, err
		}
	}
	if err := g.waitReady(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Group) add(list *[]*redisproc.Server, s *redisproc.Server) {
	if s == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	*list = append(*list, s)
}

// sentinelWrapper writes a sentinel's configuration and a script that runs
// `bin sentinel.conf --sentinel ARGS...` into dir, and returns the script's
// path: redisproc passes its own arguments (port, bind, dir) after it.
func sentinelWrapper(dir, bin, primary string, o Options) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	host, port, _ := strings.Cut(primary, ":")
	conf := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s %[4]d\n"+
		"sentinel down-after-milliseconds %[1]s %[5]d\n"+
		"sentinel failover-timeout %[1]s %[6]d\n"+
		"sentinel parallel-syncs %[1]s 1\n",
		MasterName, host, port, o.Quorum, o.DownAfter.Milliseconds(), o.FailoverTimeout.Milliseconds())
	confPath := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return "", err
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %s %s --sentinel \"$@\"\n", shellQuote(bin), shellQuote(confPath))
	path := filepath.Join(dir, "run-sentinel")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", err
	}
	return path, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// waitReady polls until every replica reports master_link_status:up and
// every sentinel sees all replicas and the other sentinels.
func (g *Group) waitReady(ctx context.Context) error {
	var last string
	for {
		ok, why := g.ready(ctx)
		if ok {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinelproc: group not ready: %s: %w", last, ctx.Err())
		case <-time.After(50 * time.Millisecond): // polling processes that are finding each other
		}
	}
}

func (g *Group) ready(ctx context.Context) (bool, string) {
	g.mu.Lock()
	nodes, sentinels := g.nodes[1:], g.sentinels
	g.mu.Unlock()
	for _, n := range nodes {
		if ok, why := redisproc.ReplicaInSync(ctx, n.Addr()); !ok {
			return false, why
		}
	}
	for _, s := range sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		m, err := c.Master(ctx, MasterName).Result()
		_ = c.Close()
		if err != nil {
			return false, fmt.Sprintf("sentinel %s: %v", s.Addr(), err)
		}
		if m["num-slaves"] != strconv.Itoa(len(nodes)) || m["num-other-sentinels"] != strconv.Itoa(len(sentinels)-1) {
			return false, fmt.Sprintf("sentinel %s sees %s replicas and %s other sentinels", s.Addr(),
				m["num-slaves"], m["num-other-sentinels"])
		}
	}
	return true, ""
}
