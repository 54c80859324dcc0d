package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is returned, with WaitReplicas set, by a write call
// whose change fewer replicas than WaitReplicas confirmed within
// WaitTimeout. The change was applied on the primary: it may or may not
// survive a failover. The message says how many replicas confirmed.
var ErrNotReplicated = errors.New("overtake: write not confirmed by enough replicas")

// defaultWaitTimeout bounds WAIT when Config.WaitTimeout is zero.
const defaultWaitTimeout = time.Second

// waitTimeout is how long WAIT waits for the replicas.
func (c *Store) waitTimeout() time.Duration {
	if c.cfg.WaitTimeout > 0 {
		return c.cfg.WaitTimeout
	}
	return defaultWaitTimeout
}

// run runs script s like s.Run, and, with Config.WaitReplicas set, sends
// WAIT in the same pipeline, on the same connection: WAIT waits for that
// connection's writes. A shortfall sets ErrNotReplicated on the reply
// (whose value stays readable with Val). Calls that only keep the fleet's
// books (heartbeat, deregister, rejoin) send no WAIT: a lost one costs a
// recovery, never a task.
func (c *Store) run(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	if c.cfg.WaitReplicas <= 0 {
		return s.Run(ctx, c.rdb, keys, args...)
	}
	node := c.writer(ctx)
	cmd, wait := c.runWait(ctx, node, s.EvalSha, keys, args)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd, wait = c.runWait(ctx, node, s.Eval, keys, args)
	}
	if cmd.Err() == nil {
		if err := c.replicated(wait); err != nil {
			cmd.SetErr(err)
		}
	}
	return cmd
}

// runWait sends one script call (EVALSHA or EVAL) and WAIT in a pipeline.
func (c *Store) runWait(ctx context.Context, node pipeliner,
	eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd, keys []string, args []any) (*redis.Cmd, *redis.Cmd) {
	var cmd, wait *redis.Cmd
	_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = eval(ctx, p, keys, args...)
		wait = c.waitCmd(ctx, p)
		return nil
	})
	return cmd, wait
}

// waitCmd queues WAIT on p, if Config.WaitReplicas asks for it, with
// the timeout replicaWatch allows.
func (c *Store) waitCmd(ctx context.Context, p redis.Pipeliner) *redis.Cmd {
	if c.cfg.WaitReplicas <= 0 {
		return nil
	}
	cmd := redis.NewCmd(ctx, "wait", c.cfg.WaitReplicas, c.replicas.timeout(c.waitTimeout()).Milliseconds())
	_ = p.Process(ctx, cmd) // queued: the pipeline's Exec sends it
	return cmd
}

// replicated turns WAIT's reply into nil or an error wrapping
// ErrNotReplicated (or WAIT's own error), and tells replicaWatch. A nil
// wait means none was sent.
func (c *Store) replicated(wait *redis.Cmd) error {
	if wait == nil {
		return nil
	}
	n, err := wait.Int64()
	if err != nil {
		return fmt.Errorf("%w: WAIT: %v", ErrNotReplicated, err)
	}
	confirmed := n >= int64(c.cfg.WaitReplicas)
	c.replicas.answered(confirmed)
	if !confirmed {
		waited := time.Duration(0)
		if args := wait.Args(); len(args) == 3 {
			ms, _ := args[2].(int64)
			waited = time.Duration(ms) * time.Millisecond
		}
		return fmt.Errorf("%w: %d of %d replicas confirmed within %v", ErrNotReplicated, n, c.cfg.WaitReplicas, waited)
	}
	return nil
}

// Once WAIT has answered with too few replicas, the replica is most
// likely gone (killed, cut off, resyncing), and every later WAIT would
// wait the whole WaitTimeout for it: each write call of the queue would
// take that long, and a worker would finish a few tasks a second. So
// while replicas are short, WAIT waits shortWait, and one call every
// probeEvery waits the whole WaitTimeout (the probe); the first WAIT
// answered with enough replicas ends the shortfall. The promise is the
// same: a call that returned nil was confirmed; one that was not fails
// with ErrNotReplicated.
const (
	shortWait  = time.Millisecond
	probeEvery = time.Second
)

// replicaWatch says how long WAIT waits: WaitTimeout, or shortWait while
// replicas are short (see shortWait).
type replicaWatch struct {
	short   atomic.Bool  // the last WAIT answered too few replicas
	probeAt atomic.Int64 // unix ns from which a WAIT waits in full again
}

// timeout is how long the next WAIT waits: full, unless replicas are
// short and another call probed less than probeEvery ago.
func (w *replicaWatch) timeout(full time.Duration) time.Duration {
	if !w.short.Load() {
		return full
	}
	now := time.Now().UnixNano()
	at := w.probeAt.Load()
	if now >= at && w.probeAt.CompareAndSwap(at, now+int64(probeEvery)) {
		return full // this call is the probe
	}
	return min(shortWait, full)
}

// answered records whether a WAIT was confirmed by enough replicas.
func (w *replicaWatch) answered(confirmed bool) {
	if confirmed {
		w.short.Store(false)
		return
	}
	if !w.short.Swap(true) {
		w.probeAt.Store(time.Now().Add(probeEvery).UnixNano())
	}
}

// writer is the client whose connections reach the queue's primary: on
// Redis Cluster the master of the queue's slot (WAIT has no key, so a
// cluster client would send it to any node), else the client itself.
func (c *Store) writer(ctx context.Context) pipeliner {
	if cc, ok := c.rdb.(masterForKey); ok {
		if node, err := cc.MasterForKey(ctx, c.keys.leases()); err == nil {
			return node
		}
	}
	return c.rdb
}

// masterForKey is what *redis.ClusterClient offers, and pipeliner what
// writer needs of a client. Small interfaces, not the types or
// redis.Cmdable: converting to those would link the cluster client and
// every command's method into binaries that use neither (a producer's
// size is guarded by make lint: 12.4 MB with them, 11.6 without).
type (
	masterForKey interface {
		MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	}
	pipeliner interface {
		Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	}
)
