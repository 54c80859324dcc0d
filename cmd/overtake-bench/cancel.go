package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	otrt "github.com/overtake/overtake/runtime"
)

// Cancel latency (figure 12, --only cancel): a worker in another process
// (this binary, run with envCancelWorker set) runs one long task at a
// time, whose handler writes a line to its stdout as it starts ("s <id>")
// and as its context ends ("c <id> <cause> <unix ns>"). The bench calls
// queue.Client.Cancel and measures from Cancel returning to the
// handler's context ending, by the machine's wall clock, which both
// processes share. Two paths: the wake message (the worker's
// subscription up), and the heartbeat (the worker stopped with SIGSTOP
// while its Pub/Sub connection is killed and the cancel sent, then
// resumed: the subscription cannot hear the message).

// The cancel worker's environment: set, the binary is that worker.
const (
	envCancelWorker = "OVERTAKE_BENCH_CANCEL_WORKER" // Redis host:port
	envCancelNS     = "OVERTAKE_BENCH_CANCEL_NS"     // queue namespace
	envCancelBeat   = "OVERTAKE_BENCH_CANCEL_BEAT"   // HeartbeatInterval
)

// cancelBeat is the cancel worker's heartbeat interval.
const cancelBeat = time.Second

// cancelWorker is the worker process's main: it runs until its stdin
// closes (the bench exited) or two minutes pass.
func cancelWorker() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	beat, _ := time.ParseDuration(os.Getenv(envCancelBeat))
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envCancelWorker)})
	defer rdb.Close()
	q, err := queue.New(rdb, queue.Config{Namespace: os.Getenv(envCancelNS)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := make(chan string, 16)
	go func() {
		for line := range out {
			fmt.Println(line)
		}
	}()
	h := handlers.HandlerFunc(func(ctx context.Context, tk *queue.TaskInfo) error {
		out <- "s " + tk.ID
		<-ctx.Done()
		at := time.Now().UnixNano()
		cause := "other"
		if errors.Is(context.Cause(ctx), handlers.ErrCanceled) {
			cause = "canceled"
		}
		out <- fmt.Sprintf("c %s %s %d", tk.ID, cause, at)
		return ctx.Err()
	})
	lc := zap.NewProductionConfig()
	lc.Level = zap.NewAtomicLevelAt(zap.ErrorLevel) // the heartbeat samples kill its subscription on purpose
	log, err := lc.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rt, err := otrt.New(q, h, otrt.Config{Concurrency: 1, HeartbeatInterval: beat, WorkerID: "cancel-bench", Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := rt.Run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// cancelResult is figure 12: both paths' latencies, from Cancel
// returning, and the wake path's from Cancel being called.
type cancelResult struct {
	pubsub, beat, called latencies
	early                int // handler's context ended before Cancel returned (counted 0)
}

// cancelProc is the worker process and its lines.
type cancelProc struct {
	cmd   *exec.Cmd
	stdin io.Closer
	lines chan []string
}

func (b *bench) startCancelWorker(ns string) (*cancelProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envCancelWorker+"="+b.addr, envCancelNS+"="+ns, envCancelBeat+"="+cancelBeat.String())
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &cancelProc{cmd: cmd, stdin: stdin, lines: make(chan []string, 16)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- strings.Fields(sc.Text())
		}
	}()
	return p, nil
}

func (p *cancelProc) stop() {
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// await waits for the worker's line of kind about task id.
func (p *cancelProc) await(kind, id string) ([]string, error) {
	timeout := time.After(sampleTimeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return nil, errors.New("the cancel worker exited")
			}
			if len(l) >= 2 && l[0] == kind && l[1] == id {
				return l, nil
			}
		case <-timeout:
			return nil, fmt.Errorf("no %q line for task %s in %v", kind, id, sampleTimeout)
		}
	}
}

// cancelLatency measures samples cancels by the wake message and beats by
// the heartbeat.
func (b *bench) cancelLatency(ctx context.Context, samples, beats int) (cancelResult, error) {
	var res cancelResult
	ns := b.ns + ":cancel"
	q, err := queue.New(b.prod, queue.Config{Namespace: ns})
	if err != nil {
		return res, err
	}
	p, err := b.startCancelWorker(ns)
	if err != nil {
		return res, err
	}
	defer p.stop()
	one := func(quiet bool) (time.Duration, time.Duration, error) {
		tk, err := q.Enqueue(ctx, queue.NewTask("long", nil))
		if err != nil {
			return 0, 0, err
		}
		if _, err := p.await("s", tk.ID); err != nil {
			return 0, 0, err
		}
		if quiet { // the heartbeat path: nothing heard on Pub/Sub
			if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				return 0, 0, err
			}
			if err := b.prod.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
				_ = p.cmd.Process.Signal(syscall.SIGCONT)
				return 0, 0, err
			}
		}
		called := time.Now()
		err = q.Cancel(ctx, tk.ID)
		returned := time.Now()
		if quiet {
			err = errors.Join(err, p.cmd.Process.Signal(syscall.SIGCONT))
		}
		if err != nil {
			return 0, 0, err
		}
		l, err := p.await("c", tk.ID)
		if err != nil {
			return 0, 0, err
		}
		if len(l) < 4 || l[2] != "canceled" {
			return 0, 0, fmt.Errorf("task %s ended with %v, not canceled", tk.ID, l)
		}
		ns, _ := strconv.ParseInt(l[3], 10, 64)
		d := time.Unix(0, ns).Sub(returned)
		if d < 0 {
			res.early++
			d = 0
		}
		return d, time.Unix(0, ns).Sub(called), nil
	}
	for i := range samples + 20 { // 20 to warm up, not counted
		d, dc, err := one(false)
		if err != nil {
			return res, fmt.Errorf("sample %d: %w", i, err)
		}
		if i >= 20 {
			res.pubsub, res.called = append(res.pubsub, d), append(res.called, dc)
		} else if d == 0 {
			res.early-- // a warm-up sample, not counted
		}
	}
	for i := range beats {
		d, _, err := one(true)
		if err != nil {
			return res, fmt.Errorf("heartbeat sample %d: %w", i, err)
		}
		res.beat = append(res.beat, d)
	}
	return res, nil
}

func (b *bench) cancelRows(ctx context.Context, t *table) {
	o := b.opts
	progress("cancel latency (%d samples, %d by heartbeat)", o.cancelSamples, o.cancelBeats)
	c, err := b.cancelLatency(ctx, o.cancelSamples, o.cancelBeats)
	if err != nil {
		t.skip("12", "cancel latency", err)
		return
	}
	t.add(row{id: "12", figure: "cancel latency p50 (running task, worker in another process, Cancel return → handler's context done)",
		value: ms(c.pubsub.pct(50)), unit: "ms", target: "—", note: "info: " + c.pubsub.summary()})
	note := c.pubsub.summary()
	if c.early > 0 {
		note += fmt.Sprintf("; %d done before Cancel returned (counted 0)", c.early)
	}
	t.add(row{id: "12", figure: "cancel latency p99", value: ms(c.pubsub.pct(99)), unit: "ms", target: "< 50 ms",
		note: verdict(c.pubsub.pct(99) < 50*time.Millisecond) + ": " + note})
	t.add(row{id: "12", figure: "cancel latency p99, Cancel called → handler's context done",
		value: ms(c.called.pct(99)), unit: "ms", target: "—", note: "info: p50 " + ms(c.called.pct(50)) + " ms, " + c.called.summary()})
	// Within one interval, plus the heartbeat's own round trip: the worker
	// resumes just after a beat, so each sample waits nearly a whole one.
	bound := cancelBeat + 50*time.Millisecond
	t.add(row{id: "12", figure: fmt.Sprintf("cancel latency max, Pub/Sub down (heartbeat every %v)", cancelBeat),
		value: ms(c.beat.pct(100)), unit: "ms", target: "< " + ms(bound) + " ms",
		note: verdict(c.beat.pct(100) < bound) + ": " + fmt.Sprintf("n=%d, p50 %s ms", len(c.beat), ms(c.beat.pct(50)))})
}
