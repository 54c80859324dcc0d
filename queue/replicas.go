package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is returned by a write call when Config.WaitReplicas is
// set and fewer replicas than that confirmed the write within
// Config.WaitTimeout. The write was applied on the primary all the same; it
// may or may not survive a failover. See docs/failover.md.
var ErrNotReplicated = errors.New("overtake: write not confirmed by enough replicas")

// defaultWaitTimeout is Config.WaitTimeout's default.
const defaultWaitTimeout = time.Second

// runWrite runs script s, which writes. With Config.WaitReplicas it sends
// `WAIT WaitReplicas WaitTimeout` in the same pipeline, hence on the same
// connection, and the returned command fails with ErrNotReplicated when
// fewer replicas confirmed. As Script.Run, it falls back to EVAL when the
// server does not have the script (NOSCRIPT: nothing ran).
func (c *Client) runWrite(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	if c.cfg.WaitReplicas <= 0 {
		return s.Run(ctx, c.rdb, keys, args...)
	}
	cmd := c.waitAfter(ctx, func(p redis.Pipeliner) *redis.Cmd { return s.EvalSha(ctx, p, keys, args...) })
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = c.waitAfter(ctx, func(p redis.Pipeliner) *redis.Cmd { return s.Eval(ctx, p, keys, args...) })
	}
	return cmd
}

// waitAfter sends the command that send queues, then WAIT, in one
// pipeline, and returns the command with ErrNotReplicated (or WAIT's own
// error) when it succeeded but too few replicas confirmed. A pipeline runs
// on one connection; a cluster client sends a keyless command of a
// pipeline to the node of the pipeline's first command, so WAIT follows
// the script there too.
func (c *Client) waitAfter(ctx context.Context, send func(redis.Pipeliner) *redis.Cmd) *redis.Cmd {
	p := c.rdb.Pipeline()
	cmd := send(p)
	wait := c.waitCmd(ctx, p)
	_, _ = p.Exec(ctx)
	if err := c.waitResult(wait); err != nil && cmd.Err() == nil {
		cmd.SetErr(err)
	}
	return cmd
}

// waitCmd queues WAIT on p when Config.WaitReplicas is set, else returns nil.
func (c *Client) waitCmd(ctx context.Context, p redis.Pipeliner) *redis.Cmd {
	if c.cfg.WaitReplicas <= 0 {
		return nil
	}
	return p.Do(ctx, "WAIT", c.cfg.WaitReplicas, c.cfg.WaitTimeout.Milliseconds())
}

// waitResult is nil when wait is nil or enough replicas confirmed, else
// the error: ErrNotReplicated, or WAIT's own.
func (c *Client) waitResult(wait *redis.Cmd) error {
	if wait == nil {
		return nil
	}
	n, err := wait.Int()
	switch {
	case err != nil:
		return fmt.Errorf("overtake: WAIT %d: %w", c.cfg.WaitReplicas, err)
	case n < c.cfg.WaitReplicas:
		return fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, n, c.cfg.WaitReplicas, c.cfg.WaitTimeout)
	}
	return nil
}
