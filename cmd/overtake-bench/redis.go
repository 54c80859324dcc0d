package main

import (
	"bufio"
	"context"
	"errors"
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

// server is a redis-server this command started on a free loopback port.
type server struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	done chan struct{}
}

// startServer starts bin on a free 127.0.0.1 port with persistence off and
// its data in a temporary directory. The server is wrapped in timeout(1)
// when available, so it ends by itself after lifetime even if this process
// is killed, and it gets SIGTERM when this process dies.
func startServer(bin string, lifetime time.Duration) (*server, error) {
	dir, err := os.MkdirTemp("", "overtake-bench-redis-")
	if err != nil {
		return nil, err
	}
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			last = err
			continue
		}
		s, err := spawn(bin, dir, port, lifetime)
		if err == nil {
			return s, nil
		}
		last = err
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("start %s: %w", bin, last)
}

func spawn(bin, dir string, port int, lifetime time.Duration) (*server, error) {
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--daemonize", "no", "--protected-mode", "yes", "--save", "", "--appendonly", "no",
		"--logfile", "", "--loglevel", "warning"}
	name := bin
	if to, err := exec.LookPath("timeout"); err == nil {
		secs := strconv.Itoa(int(lifetime / time.Second))
		args = append([]string{"--kill-after=5s", secs + "s", bin}, args...)
		name = to
	}
	log, err := os.Create(dir + "/redis-" + strconv.Itoa(port) + ".log")
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir,
		done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-s.done:
			b, _ := os.ReadFile(log.Name())
			return nil, fmt.Errorf("redis-server exited at startup: %s", strings.TrimSpace(string(b)))
		default:
		}
		if rawPing(s.addr) == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, errors.New("redis-server not ready after 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the server (SIGTERM, then SIGKILL to its process group) and
// removes its directory.
func (s *server) stop() {
	_ = syscall.Kill(s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.kill()
	}
	_ = os.RemoveAll(s.dir)
}

func (s *server) kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// rawPing sends PING over a fresh connection and expects +PONG.
func rawPing(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return errors.New(strings.TrimSpace(line))
	}
	return nil
}

// newClient returns a go-redis client of addr with the options every figure
// uses (poolSize 0 keeps go-redis' default of 10 per GOMAXPROCS).
func newClient(addr string, poolSize int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize})
}

// serverCommands returns Redis's total_commands_processed: every command
// the server ran, from any client, Pub/Sub PINGs included.
func serverCommands(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "stats").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("INFO stats has no total_commands_processed")
}

// deleteKeys removes every key of namespace ns (keys start with "{ns:").
func deleteKeys(ctx context.Context, c *redis.Client, ns string) error {
	iter := c.Scan(ctx, 0, "{"+ns+":*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if err := c.Unlink(ctx, batch...).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}
