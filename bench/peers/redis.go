package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a redis-server started by the benchmark on a free 127.0.0.1
// port, persistence off. It is wrapped in timeout(1) so that it ends by
// itself even if the benchmark is killed.
type server struct {
	cmd  *exec.Cmd
	addr string
	dir  string
}

func startServer(bin string, lifetime time.Duration) (*server, error) {
	dir, err := os.MkdirTemp("", "overtake-peers-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	args := []string{"--kill-after=5s", strconv.Itoa(int(lifetime.Seconds())) + "s", bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir, "--save", "",
		"--appendonly", "no", "--loglevel", "warning", "--logfile", ""}
	cmd := exec.Command("timeout", args...)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer: %w", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen: nothing to wait on
	}
}

// stop ends the server: SIGTERM to timeout(1), which passes it on to
// redis-server (a SIGKILL would leave redis-server running), then SIGKILL
// after 5 s.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	_ = os.RemoveAll(s.dir)
}

// info reads one numeric field of INFO section.
func info(ctx context.Context, c *redis.Client, section, field string) float64 {
	raw, err := c.Info(ctx, section).Result()
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(raw, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// commandCalls sums the calls of INFO commandstats (commands inside Lua
// included); the INFO itself is counted by the next call, not this one.
func commandCalls(ctx context.Context, c *redis.Client) int64 {
	raw, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return -1
	}
	return parseCommandCalls(raw)
}

func parseCommandCalls(raw string) int64 {
	var total int64
	for _, line := range strings.Split(raw, "\n") {
		if !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		i := strings.IndexByte(line, ':')
		if i < 0 {
			continue
		}
		for _, f := range strings.Split(line[i+1:], ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(f), "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}

// cpuSeconds is redis-server's used_cpu_sys + used_cpu_user.
func cpuSeconds(ctx context.Context, c *redis.Client) float64 {
	return info(ctx, c, "cpu", "used_cpu_sys") + info(ctx, c, "cpu", "used_cpu_user")
}

// redisVersion is the server's redis_version.
func redisVersion(ctx context.Context, c *redis.Client) string {
	raw, _ := c.Info(ctx, "server").Result()
	for _, line := range strings.Split(raw, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}
