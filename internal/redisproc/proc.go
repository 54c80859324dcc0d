package redisproc

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

// proc is one run of redis-server, possibly wrapped in timeout(1).
type proc struct {
	cmd  *exec.Cmd
	addr string
	log  string        // path of the server's log file
	done chan struct{} // closed once the process has been reaped
}

// live holds every process this package started that has not been reaped,
// for KillAll.
var live = struct {
	sync.Mutex
	procs map[*proc]struct{}
}{procs: map[*proc]struct{}{}}

// spawn starts one run of the server on its port and data directory and
// waits until it answers PING.
func (s *Server) spawn() (*proc, error) {
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port), "--dir", s.dir,
		"--daemonize", "no", "--protected-mode", "yes", "--logfile", ""}, s.args...)
	name := s.bin
	if to, err := exec.LookPath("timeout"); err == nil {
		// timeout forwards SIGTERM to redis-server and kills it after the
		// lifetime, so an orphaned server still goes away by itself.
		secs := strconv.Itoa(max(int(s.lifetime/time.Second), 1)) + "s"
		args = append([]string{"--kill-after=10s", secs, s.bin}, args...)
		name = to
	}
	logPath := filepath.Join(s.dir, "redis.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // own group, so a kill takes timeout and redis-server together
		Pdeathsig: syscall.SIGTERM, // our thread died: timeout forwards this to redis-server
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redisproc: start %s: %w", s.bin, err)
	}
	p := &proc{cmd: cmd, addr: s.Addr(), log: logPath, done: make(chan struct{})}
	live.Lock()
	live.procs[p] = struct{}{}
	live.Unlock()
	go func() {
		_ = cmd.Wait()
		live.Lock()
		delete(live.procs, p)
		live.Unlock()
		close(p.done)
	}()
	if err := p.waitReady(); err != nil {
		p.end(false)
		return nil, err
	}
	return p, nil
}

// waitReady polls PING until the server answers +PONG, the process exits,
// or readyTimeout passes.
func (p *proc) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	for {
		err := Ping(p.addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redisproc: redis-server on %s not ready after %s (last error: %v):\n%s",
				p.addr, readyTimeout, err, p.logTail())
		}
		select {
		case <-p.done:
			return fmt.Errorf("redisproc: redis-server on %s exited during start-up:\n%s", p.addr, p.logTail())
		case <-time.After(25 * time.Millisecond): // polling a process that is starting to listen
		}
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// end stops the process gracefully (SIGTERM, then SIGKILL to its group
// after stopTimeout) or as a crash (SIGKILL to its group at once), and
// reports whether it exited.
func (p *proc) end(graceful bool) bool {
	if p.exited() {
		return true
	}
	pid := p.cmd.Process.Pid
	if graceful {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-p.done:
			return true
		case <-time.After(stopTimeout):
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return true
	case <-time.After(stopTimeout):
		return false
	}
}

// logTail returns the last 15 lines of the server's log.
func (p *proc) logTail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

// KillAll kills (SIGKILL) every redis-server this package started in this
// process that is still running, and waits until they exited. A test
// binary's TestMain calls it so that no server outlives the tests.
func KillAll() {
	live.Lock()
	ps := make([]*proc, 0, len(live.procs))
	for p := range live.procs {
		ps = append(ps, p)
	}
	live.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() { p.end(false) })
	}
	wg.Wait()
}

// Ping sends PING to addr over a new connection and returns nil if the
// reply is +PONG; an error reply (-LOADING while an append-only file
// loads) is returned as an error.
func Ping(addr string) error {
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
	if line = strings.TrimSpace(line); line != "+PONG" {
		return errors.New(line)
	}
	return nil
}
