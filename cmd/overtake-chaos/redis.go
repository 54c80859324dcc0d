package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisProc is a redis-server with AOF (appendfsync always) on a fixed
// 127.0.0.1 port and data directory, so it can be killed and restarted
// from its AOF.
type redisProc struct {
	bin, dir string
	port     int
	cmd      *exec.Cmd
}

func startRedis(bin string) (*redisProc, error) {
	dir, err := os.MkdirTemp("", "overtake-chaos-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	r := &redisProc{bin: bin, dir: dir, port: port}
	return r, r.start()
}

func (r *redisProc) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

func (r *redisProc) start() error {
	// timeout(1) bounds its life even if the harness dies.
	r.cmd = exec.Command("timeout", "--kill-after=5s", "3600s", r.bin, "--bind", "127.0.0.1",
		"--port", strconv.Itoa(r.port), "--dir", r.dir, "--save", "", "--appendonly", "yes",
		"--appendfsync", "always", "--loglevel", "warning", "--logfile", "")
	if err := r.cmd.Start(); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen
	}
	return fmt.Errorf("redis-server on %s did not come up", r.addr())
}

// kill SIGKILLs redis-server itself (not its timeout wrapper).
func (r *redisProc) kill() {
	if pid, err := childPID(r.cmd.Process.Pid); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = r.cmd.Wait()
}

func (r *redisProc) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	_ = r.cmd.Wait()
	_ = os.RemoveAll(r.dir)
}

// childPID finds the one child of pid (timeout's redis-server).
func childPID(pid int) (int, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, err
	}
	var child int
	_, err = fmt.Sscan(string(raw), &child)
	return child, err
}
