package redisproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultLifetime is how long a server lives at most when neither
// Options.Lifetime nor $OVERTAKE_REDIS_LIFETIME says otherwise.
const DefaultLifetime = 30 * time.Minute

// EnvLifetime names the environment variable (a Go duration) that bounds
// the life of a server started with a zero Options.Lifetime.
const EnvLifetime = "OVERTAKE_REDIS_LIFETIME"

const (
	// readyTimeout bounds how long a started server may take to answer PING
	// (loading an append-only file included).
	readyTimeout = 20 * time.Second
	// stopTimeout bounds a graceful shutdown before the process group is
	// killed, and the wait for a killed process to be reaped.
	stopTimeout = 10 * time.Second
)

// Options configure Start. The zero value starts redis-server from PATH,
// persistence off, in a new temporary directory.
type Options struct {
	// Bin is the redis-server binary: a path, or a name looked up on PATH
	// ("" means "redis-server"). A missing binary is an error wrapping
	// exec.ErrNotFound.
	Bin string
	// Dir is the data directory (created if missing), where the log
	// (redis.log) and any append-only file live. "" means a new temporary
	// directory, which Close removes.
	Dir string
	// Persistent turns on the append-only file with appendfsync always, so
	// every acknowledged write survives Stop or Kill followed by Restart.
	// Without it the server keeps nothing on disk (save "", appendonly no).
	Persistent bool
	// Cluster starts a Redis Cluster node (cluster-enabled yes, its state in
	// nodes.conf of Dir) on a port whose bus port, port+10000, is free too.
	Cluster bool
	// Args are extra redis-server arguments, after all others, e.g.
	// {"--loglevel", "warning"}.
	Args []string
	// Lifetime bounds the life of the server (each Restart starts a new
	// one): it is run under timeout(1), when installed, which stops it
	// after Lifetime even if this process was killed. Zero means
	// $OVERTAKE_REDIS_LIFETIME if that is a positive duration, else
	// DefaultLifetime.
	Lifetime time.Duration
}

// Server is a redis-server started by Start on 127.0.0.1. Its port and data
// directory stay the same across Stop, Kill and Restart. Its methods are
// safe to call from any goroutine.
type Server struct {
	bin      string
	dir      string
	ownDir   bool
	port     int
	args     []string
	lifetime time.Duration

	mu sync.Mutex
	p  *proc // nil while stopped
}

// Start starts redis-server on a free 127.0.0.1 port and returns once it
// answers PING. It tries another port when the chosen one was taken in the
// meantime.
func Start(opts Options) (*Server, error) {
	bin := opts.Bin
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	s := &Server{bin: path, dir: opts.Dir, lifetime: lifetime(opts.Lifetime)}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "overtake-redis-"); err != nil {
			return nil, err
		}
		s.ownDir = true
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	s.args = []string{"--save", "", "--appendonly", "no"}
	if opts.Persistent {
		s.args = []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	}
	if opts.Cluster {
		s.args = append(s.args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	}
	s.args = append(s.args, opts.Args...)
	for range 5 {
		if s.port, err = FreePort(opts.Cluster); err != nil {
			break
		}
		if s.p, err = s.spawn(); err == nil || !inUse(err) {
			break
		}
	}
	if err != nil {
		if s.ownDir {
			_ = os.RemoveAll(s.dir)
		}
		return nil, err
	}
	return s, nil
}

func lifetime(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	if v, err := time.ParseDuration(os.Getenv(EnvLifetime)); err == nil && v > 0 {
		return v
	}
	return DefaultLifetime
}

// inUse reports whether a failed start was for want of the port.
func inUse(err error) bool { return strings.Contains(err.Error(), "in use") }

// Addr is the server's host:port, 127.0.0.1 and its port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Dir is the server's data directory.
func (s *Server) Dir() string { return s.dir }

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p != nil && !s.p.exited()
}

// Stop shuts the server down gracefully (SIGTERM; Redis flushes its
// append-only file) and waits until it exited, killing its process group
// if it takes longer than 10 s. Stopping a stopped server does nothing.
func (s *Server) Stop() error { return s.halt(true) }

// Kill crashes the server (SIGKILL to its process group), as a power cut
// would, and waits until it exited. With Persistent, every write
// acknowledged before the kill survives a Restart.
func (s *Server) Kill() error { return s.halt(false) }

func (s *Server) halt(graceful bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return nil
	}
	if !s.p.end(graceful) {
		return fmt.Errorf("redisproc: redis-server on %s did not exit", s.Addr())
	}
	s.p = nil
	return nil
}

// Restart starts the server again on the same port with the same data
// directory, stopping it gracefully first if it is running, and returns
// once it answers PING (with Persistent: once its append-only file is
// loaded). While the port is still held for a moment it retries.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := time.Now().Add(readyTimeout)
	for {
		p, err := s.spawn()
		if err == nil {
			s.p = p
			return nil
		}
		if !inUse(err) || time.Now().After(deadline) {
			return fmt.Errorf("redisproc: restart: %w", err)
		}
		<-time.After(200 * time.Millisecond) // until the port is free again
	}
}

// Close stops the server (as Stop) and removes its data directory if Start
// created it. The server cannot be restarted afterwards.
func (s *Server) Close() error {
	err := s.Stop()
	if s.ownDir {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}
