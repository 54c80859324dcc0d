package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a redis-server started by the benchmark on a free 127.0.0.1
// port, persistence off, its working directory a temporary one. It runs
// under timeout(1), so it ends by itself after its lifetime even if the
// benchmark is killed with SIGKILL; timeout(1) also gets SIGTERM when the
// benchmark's thread that started it dies.
type server struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	done chan struct{}
}

// startServer starts bin for at most lifetime and waits until it answers
// PING.
func startServer(bin string, lifetime time.Duration) (*server, error) {
	if _, err := exec.LookPath(bin); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "overtake-peers-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	args := []string{"--kill-after=5s", strconv.Itoa(max(int(lifetime.Seconds()), 1)) + "s", bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--protected-mode", "yes",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		"--loglevel", "warning", "--logfile", ""}
	log, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command("timeout", args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s under timeout(1): %w", bin, err)
	}
	s := &server{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir,
		done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			out, _ := os.ReadFile(log.Name())
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redis-server on %s exited at start-up: %w: %s", s.addr, err, out)
		case <-time.After(20 * time.Millisecond): // polling a process that is starting to listen
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer within 10s: %w", s.addr, err)
		}
	}
}

// stop ends the server: SIGTERM to timeout(1), which passes it on to
// redis-server, then SIGKILL to their process group after 5 s; and
// removes its directory.
// It may be called more than once.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	_ = os.RemoveAll(s.dir)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
