package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// bullDir is the node package of the BullMQ sidecar, beside this module.
const bullDir = "bullmq"

// bull is BullMQ, each workload run natively by a node process of its own
// (bullmq/run.mjs: handlers in JS, no call back into Go per job) against
// the same redis-server; this side only starts it and reads its result.
type bull struct {
	host string
	port int
	max  time.Duration // longest a sidecar may live: o.limit and the idle window, with slack
}

// sideResult is the JSON line a sidecar prints: what its scenario
// measured, or the error that ended it.
type sideResult struct {
	Ready  bool      `json:"ready"`  // idle: the worker is up
	Rate   float64   `json:"rate"`   // tasks per second
	CPUms  float64   `json:"cpu_ms"` // the node process's CPU (process.cpuUsage, user + system) over the run
	Left   int64     `json:"left"`   // jobs not done after the run
	LatMs  []float64 `json:"lat_ms"` // latency samples
	Capped int       `json:"capped"` // latency samples that hit the cap
	Error  string    `json:"error"`
}

// parseSideResult reads one line of a sidecar's stdout.
func parseSideResult(line []byte) (sideResult, error) {
	var r sideResult
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("bullmq sidecar: %w in %q", err, line)
	}
	if r.Error != "" {
		return r, fmt.Errorf("bullmq sidecar: %s", r.Error)
	}
	return r, nil
}

// latencies converts a sidecar's samples in ms.
func (r sideResult) latencies() []time.Duration {
	out := make([]time.Duration, len(r.LatMs))
	for i, ms := range r.LatMs {
		out[i] = time.Duration(ms * float64(time.Millisecond))
	}
	return out
}

// setupBullMQ makes the sidecar ready to run: node found, and
// bullmq/node_modules installed by `npm ci` from the lockfile when absent.
// It returns "BullMQ version (node version)", or an error saying why the
// BullMQ column is skipped.
func setupBullMQ() (string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", errors.New("node not found")
	}
	if _, err := os.Stat(filepath.Join(bullDir, "node_modules")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return "", errors.New("npm not found, and bullmq/node_modules absent")
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir, cmd.Stdout, cmd.Stderr = bullDir, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("npm ci in bench/peers/bullmq: %w", err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(bullDir, "node_modules", "bullmq", "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return "", err
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (node %s)", pkg.Version, strings.TrimSpace(string(out))), nil
}

func newBull(addr string, o options) (*bull, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	return &bull{host: host, port: p, max: o.limit + o.idle + 30*time.Second}, nil
}

func (b *bull) name() string { return "BullMQ" }

// sidecar is one running node process of a scenario.
type sidecar struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	cancel context.CancelFunc
}

// start starts the sidecar of scenario with args (host and port added).
func (b *bull) start(ctx context.Context, scenario string, args map[string]any) (*sidecar, error) {
	args["host"], args["port"] = b.host, b.port
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.max)
	cmd := exec.CommandContext(ctx, "node", "run.mjs", scenario, string(raw))
	cmd.Dir, cmd.Stderr = bullDir, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 16<<20)
	return &sidecar{cmd: cmd, stdin: stdin, lines: lines, cancel: cancel}, nil
}

// next reads the sidecar's next JSON line, skipping any other output.
func (s *sidecar) next() (sideResult, error) {
	for s.lines.Scan() {
		if line := s.lines.Bytes(); len(line) > 0 && line[0] == '{' {
			return parseSideResult(line)
		}
	}
	if err := s.lines.Err(); err != nil {
		return sideResult{}, err
	}
	return sideResult{}, errors.New("bullmq sidecar: exited without a result")
}

// finish closes stdin, reads the result and waits for the exit.
func (s *sidecar) finish() (sideResult, error) {
	defer s.cancel()
	_ = s.stdin.Close()
	r, err := s.next()
	if werr := s.cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("bullmq sidecar: %w", werr)
	}
	return r, err
}

// run runs scenario to its end.
func (b *bull) run(ctx context.Context, scenario string, args map[string]any) (sideResult, error) {
	s, err := b.start(ctx, scenario, args)
	if err != nil {
		return sideResult{}, err
	}
	return s.finish()
}

// fill uses addBulk, 1000 jobs a call.
func (b *bull) fill(ctx context.Context, n int, payload []byte) error {
	_, err := b.run(ctx, "fill", map[string]any{"n": n, "payload": string(payload), "batch": 1000})
	return err
}

func (b *bull) work(ctx context.Context, n, c int, o options) (int64, error) {
	r, err := b.run(ctx, "work", map[string]any{"n": n, "conc": c, "limit_ms": o.limit.Milliseconds()})
	return r.Left, err
}

func (b *bull) enqueue(ctx context.Context, n, g int) (float64, float64, error) {
	r, err := b.run(ctx, "enqueue", map[string]any{"n": n, "g": g})
	return r.Rate, r.CPUms, err
}

// batch uses addBulk.
func (b *bull) batch(ctx context.Context, n, g, size int) (float64, float64, error) {
	r, err := b.run(ctx, "batch", map[string]any{"n": n, "g": g, "size": size})
	return r.Rate, r.CPUms, err
}

func (b *bull) drain(ctx context.Context, o options) (float64, float64, error) {
	r, err := b.run(ctx, "drain", map[string]any{"n": o.drainTasks, "conc": o.conc, "limit_ms": o.limit.Milliseconds()})
	return r.Rate, r.CPUms, err
}

// idle calls measure once the sidecar's worker is up, then ends it.
func (b *bull) idle(ctx context.Context, measure func()) error {
	s, err := b.start(ctx, "idle", map[string]any{})
	if err != nil {
		return err
	}
	r, err := s.next()
	if err != nil || !r.Ready {
		_ = s.cmd.Process.Kill()
		_, _ = s.finish()
		return fmt.Errorf("bullmq idle: the worker did not start: %v", err)
	}
	measure()
	_, err = s.finish()
	return err
}

// urgent runs asynq's urgent workload: low jobs of o.lowFor keep the 4
// slots full, and BullMQ's priorities make an urgent job the next to run.
func (b *bull) urgent(ctx context.Context, samples int, o options) ([]time.Duration, int, error) {
	r, err := b.run(ctx, "urgent", map[string]any{"samples": samples, "low_ms": o.lowFor.Milliseconds(),
		"cap_ms": o.waitCap.Milliseconds(), "limit_ms": o.limit.Milliseconds()})
	return r.latencies(), r.Capped, err
}

func (b *bull) wake(ctx context.Context, samples int, o options) ([]time.Duration, int, error) {
	r, err := b.run(ctx, "wake", map[string]any{"samples": samples, "gap_ms": o.gap.Milliseconds(),
		"cap_ms": o.waitCap.Milliseconds()})
	return r.latencies(), r.Capped, err
}
