package testredis

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string

	mu sync.Mutex
	p  *proc // nil while stopped
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
	args := []string{"--save", "", "--appendonly", "no"}
	if opts.Persistent {
		args = []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	}
	args = append(args, opts.Args...)
	dir := t.TempDir()
	p, err := startOnFreePort(bins["redis-server"], dir, false, args)
	if err != nil {
		t.Fatalf("testredis: %v", err)
	}
	s := &Server{t: t, bin: bins["redis-server"], dir: dir, port: p.port, args: args, p: p}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.p != nil {
			s.p.stop(false)
			s.p = nil
		}
	})
	return s
}

// Addr is the server's host:port; it stays the same across Restart.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Dir is the server's data directory (where the append-only files live).
func (s *Server) Dir() string { return s.dir }

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return false
	}
	select {
	case <-s.p.done:
		return false
	default:
		return true
	}
}

// Stop shuts the server down gracefully (SIGTERM) and waits until it exited.
// Clients see connection errors until Restart. Stopping a stopped server is a
// no-op.
func (s *Server) Stop() error { return s.halt(true) }

// Kill crashes the server (SIGKILL), as a power cut would. With Persistent,
// every write acknowledged before the kill survives a Restart.
func (s *Server) Kill() error { return s.halt(false) }

func (s *Server) halt(graceful bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return nil
	}
	s.p.stop(graceful)
	select {
	case <-s.p.done:
	default:
		err := fmt.Errorf("testredis: redis-server on %s did not exit", s.Addr())
		s.t.Errorf("%v", err)
		return err
	}
	s.p = nil
	return nil
}

// Restart starts the server again on the same port with the same data
// directory (stopping it first if it is running) and waits until it answers
// PING, which with Persistent is after the append-only file was loaded.
func (s *Server) Restart() error {
	if err := s.halt(true); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := time.Now().Add(readyTimeout)
	for {
		p, err := startProc(s.bin, s.dir, s.port, s.args)
		if err == nil {
			s.p = p
			return nil
		}
		// Someone may hold the port for a moment (a connection in the way of
		// the bind); retry within the deadline, otherwise give up.
		if !strings.Contains(err.Error(), "in use") || time.Now().After(deadline) {
			err = errors.Join(errors.New("testredis: restart failed"), err)
			s.t.Errorf("%v", err)
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// NewClient returns a client of this server, closed at t.Cleanup. It keeps
// working across Stop and Restart (go-redis reconnects).
func (s *Server) NewClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
