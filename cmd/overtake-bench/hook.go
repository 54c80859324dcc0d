package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// counter is a go-redis hook that counts round trips: every ProcessHook
// call (one command) and every ProcessPipelineHook call (one pipeline or
// transaction) is one. It also sorts commands by what they do, reading the
// queue's script calls by their first key, and counts the tasks that lease
// calls returned. Pub/Sub traffic does not pass through hooks.
type counter struct {
	trips  atomic.Int64
	leased atomic.Int64 // tasks returned by lease calls
	writes atomic.Int64 // socket writes on every connection, Pub/Sub included

	mu    sync.Mutex
	kinds map[string]int64
}

func newCounter() *counter { return &counter{kinds: map[string]int64{}} }

var _ redis.Hook = (*counter)(nil)

// DialHook wraps every connection the client dials, Pub/Sub ones included,
// to count socket writes: one per command or pipeline sent.
func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: conn, writes: &c.writes}, nil
	}
}

// countingConn counts writes. It exposes the socket (syscall.Conn) so that
// go-redis' pool health checks keep working.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

func (c countingConn) SyscallConn() (syscall.RawConn, error) {
	if s, ok := c.Conn.(syscall.Conn); ok {
		return s.SyscallConn()
	}
	return nil, errors.New("not a syscall.Conn")
}

func (c countingConn) NetConn() net.Conn { return c.Conn }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		err := next(ctx, cmd)
		kind := kindOf(cmd)
		if kind == "lease" && err == nil {
			if v, ok := cmd.(*redis.Cmd); ok {
				if raw, ok := v.Val().([]any); ok && len(raw) > 0 {
					if head, _ := raw[0].(int64); head >= 0 {
						// 6 header values, then 4 a task (see store's lease).
						c.leased.Add(int64(max(len(raw)-6, 0) / 4))
					}
				}
			}
		}
		c.add(kind)
		return err
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		c.add(fmt.Sprintf("pipeline(%d)", len(cmds)))
		return next(ctx, cmds)
	}
}

func (c *counter) add(kind string) {
	c.mu.Lock()
	c.kinds[kind]++
	c.mu.Unlock()
}

// snapshot is the counter's state at one moment.
type snapshot struct {
	trips, leased, writes int64
	kinds                 map[string]int64
}

func (c *counter) snapshot() snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return snapshot{trips: c.trips.Load(), leased: c.leased.Load(), writes: c.writes.Load(), kinds: maps.Clone(c.kinds)}
}

// sub returns s minus an earlier snapshot.
func (s snapshot) sub(old snapshot) snapshot {
	out := snapshot{trips: s.trips - old.trips, leased: s.leased - old.leased, writes: s.writes - old.writes,
		kinds: map[string]int64{}}
	for k, v := range s.kinds {
		if d := v - old.kinds[k]; d != 0 {
			out.kinds[k] = d
		}
	}
	return out
}

// perTask formats the breakdown as "kind n/task" pairs, largest first.
func (s snapshot) perTask(n int) string {
	keys := slices.Collect(maps.Keys(s.kinds))
	slices.SortFunc(keys, func(a, b string) int { return int(s.kinds[b] - s.kinds[a]) })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.3g", k, float64(s.kinds[k])/float64(n)))
	}
	return strings.Join(parts, ", ")
}

// kindOf names a command: the queue's scripts by their first key (and
// argument count, which tells finish from checkpoint), others by name.
func kindOf(cmd redis.Cmder) string {
	name := cmd.Name()
	if name != "evalsha" && name != "eval" {
		return name
	}
	args := cmd.Args()
	if len(args) < 4 {
		return name
	}
	key, _ := args[3].(string)
	nkeys, _ := args[2].(int)
	argv := len(args) - 3 - nkeys
	kind := "script"
	switch {
	case nkeys == 2 && strings.Contains(key, "}:t:"):
		kind = "enqueue"
	case strings.HasSuffix(key, "}:leases"):
		// finish.lua declares leases first too, and done fifth.
		kind = "lease"
		if nkeys >= 5 {
			if k5, _ := args[7].(string); strings.HasSuffix(k5, "}:done") {
				kind = "finish"
			}
		}
	case strings.HasSuffix(key, "}:alive"):
		kind = "heartbeat"
	case strings.HasSuffix(key, "}:cnt"):
		kind = "stats"
	case strings.Contains(key, "}:t:") && nkeys == 1:
		// finish has its mode in ARGV[5]; checkpoint has the data there.
		kind = "checkpoint"
		if argv >= 5 {
			switch mode, _ := args[3+nkeys+4].(string); mode {
			case "ack", "retry", "dead", "requeue":
				kind = mode
			}
		}
	}
	if name == "eval" {
		kind += "(eval)"
	}
	return kind
}
