package testredis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
)

// EnvRedisAddr names the environment variable holding the address of a real
// Redis shared by all test binaries (set by `make test`).
const EnvRedisAddr = "OVERTAKE_REDIS_ADDR"

// Backend names.
const (
	NameMini = "miniredis"
	NameReal = "redis"
)

// Backend is one Redis a test runs against.
type Backend struct {
	// Name is NameMini or NameReal; ForEach uses it as the subtest name.
	Name string
	// Client is connected to the backend and closed at t.Cleanup.
	Client redis.UniversalClient
	// Prefix is unique to this Backends call (test name plus random suffix,
	// only [A-Za-z0-9_.-]). Use it as the namespace of every key: a real
	// server may be shared with other tests and packages running at the same
	// time. On real servers, keys containing it are deleted at t.Cleanup.
	Prefix string
	// Addr is the backend's host:port.
	Addr string
	// Miniredis is the in-process server for the miniredis backend (to
	// FastForward time, inspect or corrupt data), nil otherwise.
	Miniredis *miniredis.Miniredis
}

// IsMini reports whether b is the miniredis backend.
func (b Backend) IsMini() bool { return b.Miniredis != nil }

// NewClient opens another client of the same backend (for a second worker
// process, a pub/sub listener, ...), closed at t.Cleanup.
func (b Backend) NewClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: b.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Backends returns a miniredis backend and, when available, a real Redis one
// (see the package documentation for how it is chosen). Clients are closed at
// t.Cleanup.
func Backends(t testing.TB) []Backend {
	t.Helper()
	prefix := uniquePrefix(t)
	bs := []Backend{miniBackend(t, prefix)}
	if b, ok := realBackend(t, prefix); ok {
		bs = append(bs, b)
	}
	return bs
}

// ForEach runs fn as a subtest per backend, named after Backend.Name.
func ForEach(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Backends(t) {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

// Mini returns a miniredis backend alone, for a test that needs a Redis
// but none of a real server's behaviour.
func Mini(t testing.TB) Backend {
	t.Helper()
	return miniBackend(t, uniquePrefix(t))
}

func miniBackend(t testing.TB, prefix string) Backend {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatalf("testredis: start miniredis: %v", err)
	}
	t.Cleanup(m.Close)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return Backend{Name: NameMini, Client: c, Prefix: prefix, Addr: m.Addr(), Miniredis: m}
}

func realBackend(t testing.TB, prefix string) (Backend, bool) {
	addr := os.Getenv(EnvRedisAddr)
	if addr == "" {
		if testing.Short() {
			logOnce(t, "testredis: -short: real Redis backend skipped (miniredis only)")
			return Backend{}, false
		}
		bins, err := lookRedis("redis-server")
		if err != nil {
			logOnce(t, "testredis: "+EnvRedisAddr+" unset and "+err.Error()+": real Redis backend skipped (miniredis only)")
			return Backend{}, false
		}
		if addr, err = sharedAddr(bins["redis-server"]); err != nil {
			t.Fatalf("testredis: shared redis-server: %v", err)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Fatalf("testredis: real Redis at %s unreachable: %v", addr, err)
	}
	t.Cleanup(func() {
		deletePrefix(c, prefix)
		_ = c.Close()
	})
	return Backend{Name: NameReal, Client: c, Prefix: prefix, Addr: addr}, true
}

// deletePrefix removes the keys a test left behind on a shared server.
func deletePrefix(c *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
}

var logged sync.Once

func logOnce(t testing.TB, msg string) {
	logged.Do(func() { t.Log(msg) })
}

// uniquePrefix builds a key-safe namespace from the test name and 6 random bytes.
func uniquePrefix(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		default:
			return '_'
		}
	}, t.Name())
	if len(name) > 48 {
		name = name[len(name)-48:]
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t-" + name + "-" + hex.EncodeToString(b[:])
}

// The shared per-binary server, started on first use and stopped by Main.
var shared struct {
	once sync.Once
	srv  *redisproc.Server
	err  error
}

func sharedAddr(bin string) (string, error) {
	shared.once.Do(func() {
		shared.srv, shared.err = redisproc.Start(redisproc.Options{Bin: bin})
	})
	if shared.err != nil {
		return "", shared.err
	}
	return shared.srv.Addr(), nil
}
