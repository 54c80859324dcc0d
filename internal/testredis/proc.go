package testredis

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// readyTimeout bounds how long a started server may take to answer PING.
	readyTimeout = 15 * time.Second
	// stopTimeout bounds a graceful shutdown before the process group is killed.
	stopTimeout = 10 * time.Second
	// defaultLifetime caps how long any server we start may live.
	defaultLifetime = 30 * time.Minute
)

// proc is one redis-server process, possibly wrapped in timeout(1).
type proc struct {
	cmd     *exec.Cmd
	port    int
	dir     string
	logPath string
	done    chan struct{} // closed once the process has been reaped
}

// live tracks every process this package started, so Main can stop leftovers.
var live = struct {
	sync.Mutex
	procs map[*proc]struct{}
}{procs: map[*proc]struct{}{}}

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

func lifetime() time.Duration {
	if v := os.Getenv("OVERTAKE_REDIS_LIFETIME"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
	}
	return defaultLifetime
}

// startProc starts redis-server on 127.0.0.1:port with its data in dir and
// waits until it answers PING. extra holds additional redis-server arguments.
func startProc(bin, dir string, port int, extra []string) (*proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--dir", dir,
		"--daemonize", "no",
		"--protected-mode", "yes",
		"--logfile", "",
	}
	args = append(args, extra...)
	name := bin
	if to, err := exec.LookPath("timeout"); err == nil {
		// timeout forwards SIGTERM to redis-server and kills it after the
		// lifetime, so an orphaned server still goes away by itself.
		secs := int(lifetime() / time.Second)
		args = append([]string{"--kill-after=10s", strconv.Itoa(secs) + "s", bin}, args...)
		name = to
	}
	logPath := filepath.Join(dir, "redis.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // own group, so Kill can take timeout and redis together
		Pdeathsig: syscall.SIGTERM, // test binary died: timeout forwards this to redis-server
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	p := &proc{cmd: cmd, port: port, dir: dir, logPath: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	live.Lock()
	live.procs[p] = struct{}{}
	live.Unlock()
	if err := p.waitReady(readyTimeout); err != nil {
		p.stop(false)
		return nil, err
	}
	return p, nil
}

func (p *proc) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// waitReady polls PING until the server answers +PONG, the process exits, or
// the timeout passes.
func (p *proc) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("redis-server on %s exited during startup:\n%s", p.addr(), p.logTail())
		default:
		}
		if last = ping(p.addr()); last == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s not ready after %s (last error: %v):\n%s", p.addr(), timeout, last, p.logTail())
}

// stop ends the process: gracefully (SIGTERM, Redis flushes its AOF) or as a
// crash (SIGKILL to the whole process group). It waits for the process to go.
func (p *proc) stop(graceful bool) {
	defer func() {
		live.Lock()
		delete(live.procs, p)
		live.Unlock()
	}()
	select {
	case <-p.done:
		return
	default:
	}
	pid := p.cmd.Process.Pid
	if graceful {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(stopTimeout):
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
	}
}

func (p *proc) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

// stopAll stops every process still running; used by Main.
func stopAll() {
	live.Lock()
	ps := make([]*proc, 0, len(live.procs))
	for p := range live.procs {
		ps = append(ps, p)
	}
	live.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop(false)
		}()
	}
	wg.Wait()
}

// ping sends a raw PING and expects +PONG (a -LOADING reply counts as not ready).
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
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

// freePort returns a loopback TCP port that was free a moment ago. If withBus
// is set, port+10000 (the Redis Cluster bus port) is free too.
func freePort(withBus bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !withBus {
			l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		l.Close()
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("no free loopback port found after 100 tries")
}

// startOnFreePort starts redis-server on a fresh free port, retrying a few
// times when another process grabbed the port in between.
func startOnFreePort(bin, dir string, withBus bool, extra []string) (*proc, error) {
	var last error
	for range 5 {
		port, err := freePort(withBus)
		if err != nil {
			return nil, err
		}
		p, err := startProc(bin, dir, port, extra)
		if err == nil {
			return p, nil
		}
		last = err
		if !strings.Contains(err.Error(), "in use") {
			return nil, err
		}
	}
	return nil, last
}
