package testredis

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ErrDown is what a DownClient's dials fail with while it is down.
var ErrDown = errors.New("testredis: backend down (DownClient)")

// DownClient returns a client of b that cannot reach it until up is
// called: its dials fail with ErrDown, and it never retries. It stands for
// a process started while Redis was down, on either backend (a real Redis
// shared with other tests cannot be stopped). Closed at t.Cleanup.
func (b Backend) DownClient(t testing.TB) (rdb *redis.Client, up func()) {
	t.Helper()
	var on atomic.Bool
	var d net.Dialer
	rdb = redis.NewClient(&redis.Options{Addr: b.Addr, MaxRetries: -1, DialerRetries: 1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !on.Load() {
				return nil, ErrDown
			}
			return d.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, func() { on.Store(true) }
}
