package redisproc_test

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/overtake/overtake/internal/redisproc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// needRedis skips the test where redis-server is missing and in -short mode.
func needRedis(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real redis-server")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("needs a real redis-server: %v", err)
	}
}

// start starts a server for one test, closed at t.Cleanup.
func start(t *testing.T, opts redisproc.Options) *redisproc.Server {
	t.Helper()
	needRedis(t)
	s, err := redisproc.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func client(t *testing.T, s *redisproc.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestKillRestartKeepsPortAndData(t *testing.T) {
	s := start(t, redisproc.Options{Persistent: true})
	host, _, err := net.SplitHostPort(s.Addr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	addr, ctx, c := s.Addr(), context.Background(), client(t, s)
	require.NoError(t, c.Set(ctx, "k", "before the crash", 0).Err())

	require.NoError(t, s.Kill())
	assert.False(t, s.Running())
	assert.Error(t, redisproc.Ping(addr), "a killed server does not answer")
	require.NoError(t, s.Restart())
	assert.True(t, s.Running())
	assert.Equal(t, addr, s.Addr())
	assert.Equal(t, "before the crash", c.Get(ctx, "k").Val())

	require.NoError(t, c.Set(ctx, "k", "before the stop", 0).Err())
	require.NoError(t, s.Stop())
	require.NoError(t, s.Stop(), "stopping a stopped server does nothing")
	require.NoError(t, s.Restart())
	require.NoError(t, s.Restart(), "restarting a running server stops it first")
	assert.Equal(t, "before the stop", c.Get(ctx, "k").Val())
}

func TestNotPersistentLosesDataAndTakesArgs(t *testing.T) {
	s := start(t, redisproc.Options{Args: []string{"--maxmemory", "10mb"}})
	ctx, c := context.Background(), client(t, s)
	assert.Equal(t, map[string]string{"maxmemory": "10485760"}, c.ConfigGet(ctx, "maxmemory").Val())
	assert.Equal(t, map[string]string{"appendonly": "no"}, c.ConfigGet(ctx, "appendonly").Val())
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	require.NoError(t, s.Kill())
	require.NoError(t, s.Restart())
	assert.Equal(t, redis.Nil, c.Get(ctx, "k").Err())
}

func TestCloseRemovesItsOwnDirOnly(t *testing.T) {
	s := start(t, redisproc.Options{})
	require.DirExists(t, s.Dir())
	require.NoError(t, s.Close())
	assert.NoDirExists(t, s.Dir())
	assert.Error(t, redisproc.Ping(s.Addr()))

	given := t.TempDir()
	g := start(t, redisproc.Options{Dir: given})
	assert.Equal(t, given, g.Dir())
	require.NoError(t, g.Close())
	assert.FileExists(t, given+"/redis.log")
}

func TestClusterNode(t *testing.T) {
	s := start(t, redisproc.Options{Cluster: true})
	info := client(t, s).Info(context.Background(), "cluster").Val()
	assert.Contains(t, info, "cluster_enabled:1")
	_, port, err := net.SplitHostPort(s.Addr())
	require.NoError(t, err)
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	bus, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n+10000)), time.Second)
	require.NoError(t, err, "the cluster bus listens on port+10000")
	_ = bus.Close()
}

func TestStartFailures(t *testing.T) {
	_, err := redisproc.Start(redisproc.Options{Bin: "no-such-redis-server"})
	assert.ErrorIs(t, err, exec.ErrNotFound)

	needRedis(t)
	dir := t.TempDir()
	_, err = redisproc.Start(redisproc.Options{Dir: dir, Args: []string{"--no-such-option", "x"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited during start-up")
	assert.Contains(t, err.Error(), "no-such-option", "the error carries the log's tail")
	assert.DirExists(t, dir, "a given directory is kept")
}

func TestLifetimeBoundsTheServer(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skipf("needs timeout(1): %v", err)
	}
	s := start(t, redisproc.Options{Lifetime: 2 * time.Second})
	assert.True(t, s.Running())
	assert.Eventually(t, func() bool { return !s.Running() }, 20*time.Second, 50*time.Millisecond)
}

func TestKillAll(t *testing.T) {
	a := start(t, redisproc.Options{})
	b := start(t, redisproc.Options{})
	redisproc.KillAll()
	assert.False(t, a.Running())
	assert.False(t, b.Running())
}

func TestFreePorts(t *testing.T) {
	ports, err := redisproc.FreePorts(5, true)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, seen[p], "ports are distinct")
		seen[p] = true
		assert.LessOrEqual(t, p+10000, 65535)
		for _, q := range []int{p, p + 10000} {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
			require.NoError(t, err)
			_ = l.Close()
		}
	}
	p, err := redisproc.FreePort(false)
	require.NoError(t, err)
	assert.Positive(t, p)
}

func TestPingWantsPong(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("-LOADING Redis is loading the dataset in memory\r\n"))
	}()
	err = redisproc.Ping(l.Addr().String())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "LOADING")
}
