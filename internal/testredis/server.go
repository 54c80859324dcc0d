package testredis

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/redisproc"
)

// ServerOptions configure a dedicated server started by StartServer.
type ServerOptions struct {
	// Persistent turns on the append-only file with appendfsync always, so
	// every acknowledged write survives Stop or Kill followed by Restart.
	// Without it the server keeps nothing on disk (save "" and appendonly no).
	Persistent bool
	// Args are extra redis-server arguments, e.g. {"--maxmemory", "10mb"}.
	Args []string
}

// Server is a redis-server owned by one test. Its methods are safe to call
// from any goroutine; failures are reported with t.Errorf and returned.
type Server struct {
	t   testing.TB
	srv *redisproc.Server
}

// StartServer starts a dedicated redis-server on a free 127.0.0.1 port with
// its data in t.TempDir(), and kills it at t.Cleanup. It skips the test if
// redis-server is not installed or in -short mode.
func StartServer(t testing.TB, opts ServerOptions) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("testredis: skipping in -short mode: needs a real redis-server")
	}
	bins, err := lookRedis("redis-server")
	if err != nil {
		t.Skipf("testredis: skipping, needs a real Redis: %v", err)
	}
	srv, err := redisproc.Start(redisproc.Options{Bin: bins["redis-server"], Dir: t.TempDir(),
		Persistent: opts.Persistent, Args: opts.Args})
	if err != nil {
		t.Fatalf("testredis: %v", err)
	}
	t.Cleanup(func() { _ = srv.Kill() })
	return &Server{t: t, srv: srv}
}

// Addr is the server's host:port; it stays the same across Restart.
func (s *Server) Addr() string { return s.srv.Addr() }

// Dir is the server's data directory (where the append-only files live).
func (s *Server) Dir() string { return s.srv.Dir() }

// Running reports whether the server process is up.
func (s *Server) Running() bool { return s.srv.Running() }

// Stop shuts the server down gracefully (SIGTERM) and waits until it exited.
// Clients see connection errors until Restart. Stopping a stopped server is a
// no-op.
func (s *Server) Stop() error { return s.report(s.srv.Stop()) }

// Kill crashes the server (SIGKILL), as a power cut would. With Persistent,
// every write acknowledged before the kill survives a Restart.
func (s *Server) Kill() error { return s.report(s.srv.Kill()) }

// Restart starts the server again on the same port with the same data
// directory (stopping it first if it is running) and waits until it answers
// PING, which with Persistent is after the append-only file was loaded.
func (s *Server) Restart() error { return s.report(s.srv.Restart()) }

// report fails the test on err, and returns it.
func (s *Server) report(err error) error {
	if err != nil {
		err = fmt.Errorf("testredis: %w", err)
		s.t.Errorf("%v", err)
	}
	return err
}

// NewClient returns a client of this server, closed at t.Cleanup. It keeps
// working across Stop and Restart (go-redis reconnects).
func (s *Server) NewClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lookRedis finds the named Redis binaries on PATH.
func lookRedis(names ...string) (map[string]string, error) {
	paths := make(map[string]string, len(names))
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			return nil, fmt.Errorf("%s is not installed (not on PATH)", n)
		}
		paths[n] = p
	}
	return paths, nil
}
