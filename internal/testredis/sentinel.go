package testredis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/testredis/sentinelproc"
)

// sentinelStartTimeout bounds StartSentinel: the sentinels find each other
// through hello messages sent every 2 s.
const sentinelStartTimeout = 60 * time.Second

// Sentinel is a Redis Sentinel group owned by one test: a primary with its
// append-only file fsynced every second, its replicas and three sentinels
// (see internal/testredis/sentinelproc). Its methods are those of
// sentinelproc.Group: FailoverOptions and UniversalOptions for go-redis
// clients, KillPrimary, WaitFailover, Rejoin, WaitReplicas.
type Sentinel struct {
	*sentinelproc.Group
}

// StartSentinel starts a Sentinel group on free 127.0.0.1 ports with its data
// in t.TempDir(), and stops it at t.Cleanup. opts.Dir is ignored. A failover
// after KillPrimary takes about 2-3 s with the default options. It skips the
// test if redis-server is not installed or in -short mode.
func StartSentinel(t testing.TB, opts sentinelproc.Options) *Sentinel {
	t.Helper()
	if testing.Short() {
		t.Skip("testredis: skipping in -short mode: needs a real redis-server and sentinels")
	}
	bins, err := lookRedis("redis-server")
	if err != nil {
		t.Skipf("testredis: skipping, needs a real Redis: %v", err)
	}
	if opts.Bin == "" {
		opts.Bin = bins["redis-server"]
	}
	opts.Dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelStartTimeout)
	defer cancel()
	g, err := sentinelproc.Start(ctx, opts)
	if err != nil {
		t.Fatalf("testredis: %v", err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return &Sentinel{Group: g}
}

// NewClient returns a go-redis FailoverClient of the group with the given
// options (nil: FailoverOptions as they are), closed at t.Cleanup. It
// follows the primary across failovers.
func (s *Sentinel) NewClient(t testing.TB, opts *redis.FailoverOptions) *redis.Client {
	t.Helper()
	if opts == nil {
		opts = s.FailoverOptions()
	}
	c := redis.NewFailoverClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
