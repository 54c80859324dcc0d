package testredis

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Refuser is a go-redis hook (AddHook) that, while on, refuses every
// command naming a key or argument that contains its tag, alone or in a
// pipeline, with a refused connection's error, before it is sent; the
// other commands go through. Given a shard's hash tag it stands for that
// shard's master being down while the others answer.
type Refuser struct {
	tag  string
	on   atomic.Bool
	hits atomic.Int64
}

// NewRefuser returns a Refuser of tag, off.
func NewRefuser(tag string) *Refuser { return &Refuser{tag: tag} }

// Set turns the refusal on or off.
func (r *Refuser) Set(on bool) { r.on.Store(on) }

// Hits counts the commands refused so far.
func (r *Refuser) Hits() int64 { return r.hits.Load() }

func (r *Refuser) refuses(cmd redis.Cmder) bool {
	if !r.on.Load() {
		return false
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.Contains(s, r.tag) {
			r.hits.Add(1)
			cmd.SetErr(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
			return true
		}
	}
	return false
}

// DialHook is go-redis's: dials go through.
func (r *Refuser) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook refuses a command on the tag's keys.
func (r *Refuser) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if r.refuses(cmd) {
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook refuses a pipeline's commands on the tag's keys
// and sends the others.
func (r *Refuser) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		rest := make([]redis.Cmder, 0, len(cmds))
		for _, cmd := range cmds {
			if !r.refuses(cmd) {
				rest = append(rest, cmd)
			}
		}
		if len(rest) == 0 {
			return nil
		}
		return next(ctx, rest)
	}
}
