package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testworker"
	"github.com/overtake/overtake/queue"
)

// fakeOut stands for stdout: a terminal of a given size or a pipe. Each
// Write (one per frame) is also sent on writes.
type fakeOut struct {
	tty    bool
	cols   atomic.Int64
	mu     sync.Mutex
	all    bytes.Buffer
	writes chan string
}

func newFakeOut(tty bool, cols int) *fakeOut {
	f := &fakeOut{tty: tty, writes: make(chan string, 10000)}
	f.cols.Store(int64(cols))
	return f
}

func (f *fakeOut) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.all.Write(p)
	f.mu.Unlock()
	select {
	case f.writes <- string(p):
	default:
	}
	return len(p), nil
}

func (f *fakeOut) isTerminal() bool       { return f.tty }
func (f *fakeOut) size() (cols, rows int) { return int(f.cols.Load()), 60 }

func (f *fakeOut) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.all.String()
}

// next returns the next write, failing the test after 10 s.
func (f *fakeOut) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-f.writes:
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("no frame within 10s; output so far:\n%s", f.String())
		return ""
	}
}

// until returns the first write that ok accepts, within 10 s.
func (f *fakeOut) until(t *testing.T, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-f.writes:
			if ok(s) {
				return s
			}
		case <-deadline:
			t.Fatalf("no frame with %s within 10s; output so far:\n%s", what, f.String())
		}
	}
}

// startCLI runs the command line in the background; its exit status
// arrives on the returned channel.
func startCLI(ctx context.Context, out *fakeOut, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, out, &bytes.Buffer{}) }()
	return done
}

func exitOf(t *testing.T, done <-chan int) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not end within 10s of its context")
		return -1
	}
}

// seedWatch leaves: 3 tasks at high (one leased by w-live, capacity 4),
// normal paused, 2 tasks at low, and outcome counts in the last complete
// rate bucket reported by w-rates through a heartbeat on a clock set
// inside that bucket: at high 120 processed, 6 failed, 3 SLA breaches in
// the minute; at low 30 processed, 15 preempted.
func seedWatch(t *testing.T, b testredis.Backend, q *queue.Client) {
	ctx := context.Background()
	for _, l := range []int{2, 2, 2, 0, 0} {
		if _, err := q.Enqueue(ctx, queue.NewTask("x", nil), queue.Level(l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Pause(ctx, 1, queue.PauseWait); err != nil {
		t.Fatal(err)
	}
	live := testworker.New(q, "w-live")
	if err := live.Heartbeat(ctx, 4, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := live.LeaseOne(ctx, 2); err != nil {
		t.Fatalf("lease: %v", err)
	}
	now, err := b.Client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	bucket := now.UnixMilli() / 10_000
	inPrev := time.UnixMilli((bucket-1)*10_000 + 500)
	qc, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Clock: func() time.Time { return inPrev }})
	if err != nil {
		t.Fatal(err)
	}
	err = testworker.New(qc, "w-rates").Heartbeat(ctx, 2, 10*time.Minute, map[int]testworker.Counts{
		2: {Processed: 120, Failed: 6, SLABreaches: 3},
		0: {Processed: 30, Preempted: 15},
	})
	if err != nil {
		t.Fatal(err)
	}
}

var escape = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

func TestStatsWatch(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		q := c.client()
		seedWatch(t, b, q)
		rows := []string{
			`(?m)^\s*2\s+high\s+running\s+2\s+1\s+0\s+0\s+0\s+\S+\s+OVER 1ms\s+2\s+0.1\s+0\s+3$`,
			`(?m)^\s*1\s+normal\s+paused\s+0\s+0\s+0\s+0\s+0\s+-\s+-\s+0\s+0\s+0\s+0$`,
			`(?m)^\s*total\s+4\s+1\s+0\s+0\s+0\s+2.5\s+0.1\s+0.25\s+3$`,
			`(?m)^w-live\s+1/4\s+\S+ ago\s+-$`,
			`(?m)^w-rates\s+0/2\s+(9\.\d|1\d|20)(\.\d)?s ago\s+-$`,
		}
		matchAll := func(frame string, res ...string) {
			t.Helper()
			plain := escape.ReplaceAllString(frame, "")
			for _, re := range res {
				if !regexp.MustCompile(re).MatchString(plain) {
					t.Errorf("frame does not match %s:\n%s", re, plain)
				}
			}
		}
		lowRow := `(?m)^\s*0\s+low\s+%s\s+2\s+0\s+0\s+0\s+0\s+\S+\s+-\s+0.5\s+0\s+0.25\s+0$`

		// A terminal: frames redrawn in place until the context ends.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := newFakeOut(true, 200)
		done := startCLI(ctx, out, append([]string{"stats", "--watch", "--interval", "20ms", "--sla", "high=1ms"}, c.conn...)...)
		first := out.next(t)
		if !strings.HasPrefix(first, escHideCursor+escHome+"overtake stats every 20ms at ") ||
			!strings.HasSuffix(first, escClearLine+"\n"+escClearBelow) || strings.Contains(first, "\x1b[2J") {
			t.Fatalf("first frame %q", first)
		}
		for _, l := range strings.Split(strings.TrimSuffix(first, escClearBelow), "\n") {
			if l != "" && !strings.HasSuffix(l, escClearLine) {
				t.Errorf("line without its tail cleared: %q", l)
			}
		}
		matchAll(first, append(rows, strings.Replace(lowRow, "%s", "running", 1))...)

		if err := q.Pause(context.Background(), 0, queue.PausePreempt); err != nil {
			t.Fatal(err)
		}
		paused := out.until(t, "low paused", func(s string) bool { return strings.Contains(s, "paused (preempt)") })
		if !strings.HasPrefix(paused, escHome) {
			t.Errorf("later frame %q", paused)
		}
		matchAll(paused, append(rows, strings.Replace(lowRow, "%s", `paused \(preempt\)`, 1))...)

		// The terminal narrows: every line fits in 40 columns (39 runes).
		out.cols.Store(40)
		narrow := out.until(t, "40 columns", func(s string) bool { return !strings.Contains(s, "BREACHES") })
		for _, l := range strings.Split(escape.ReplaceAllString(narrow, ""), "\n") {
			if n := utf8.RuneCountInString(l); n > 39 {
				t.Errorf("line of %d runes on a 40-column terminal: %q", n, l)
			}
		}
		cancel() // Ctrl-C
		if code := exitOf(t, done); code != 0 {
			t.Fatalf("exit %d after Ctrl-C", code)
		}
		if all := out.String(); !strings.HasSuffix(all, escClearBelow+escShowCursor+"\n") {
			t.Errorf("output does not end by showing the cursor: %q", all[max(len(all)-40, 0):])
		}
	})
}

func TestStatsWatchPlain(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		seedWatch(t, b, c.client())
		high := regexp.MustCompile(`(?m)^\s*2\s+high\s+running\s+2\s+1\s+0\s+0\s+0\s+\S+\s+2\s+0.1\s+0\s+3$`)

		// Not a terminal: plain frames separated by a blank line.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := newFakeOut(false, 20)
		done := startCLI(ctx, out, append([]string{"stats", "--watch", "--interval", "20ms"}, c.conn...)...)
		frames := []string{out.next(t), out.next(t), out.next(t)}
		cancel()
		if code := exitOf(t, done); code != 0 {
			t.Fatalf("exit %d", code)
		}
		for i, f := range frames {
			prefix := "overtake stats every 20ms at "
			if i > 0 {
				prefix = "\n" + prefix
			}
			if !strings.HasPrefix(f, prefix) || !high.MatchString(f) || !strings.Contains(f, "BREACHES/min") {
				t.Errorf("plain frame %d:\n%q", i, f)
			}
		}
		if all := out.String(); strings.Contains(all, "\x1b") {
			t.Errorf("escapes in plain output: %q", all)
		}

		// --json: one object per line per interval, even on a terminal.
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		out = newFakeOut(true, 80)
		done = startCLI(ctx, out, append([]string{"stats", "--watch", "--json", "--interval", "20ms"}, c.conn...)...)
		lines := []string{out.next(t), out.next(t)}
		cancel()
		if code := exitOf(t, done); code != 0 {
			t.Fatalf("json exit %d", code)
		}
		for _, l := range lines {
			var doc statsJSON
			if strings.Count(l, "\n") != 1 || !strings.HasSuffix(l, "\n") || json.Unmarshal([]byte(l), &doc) != nil {
				t.Fatalf("not one JSON object per line: %q", l)
			}
			hi := doc.Levels[2]
			if len(doc.Levels) != 3 || hi.Pending != 2 || hi.InFlight != 1 || hi.Rates.ProcessedPerSecond != 2 ||
				hi.Rates.FailedPerSecond != 0.1 || doc.Levels[1].State != "paused" || len(doc.Workers) != 2 {
				t.Errorf("json frame %s", l)
			}
		}
		if strings.Contains(out.String(), "\x1b") {
			t.Errorf("escapes in JSON output")
		}

		// --once on a terminal: one plain frame, then exit by itself.
		out = newFakeOut(true, 80)
		if code := exitOf(t, startCLI(context.Background(), out, append([]string{"stats", "--watch", "--once"}, c.conn...)...)); code != 0 {
			t.Fatalf("--once exit %d", code)
		}
		if all := out.String(); strings.Contains(all, "\x1b") || !high.MatchString(all) || strings.Contains(all, "Ctrl-C") {
			t.Errorf("--once output:\n%q", all)
		}
	})
}

func TestStatsFlagsInvalid(t *testing.T) {
	for _, args := range [][]string{
		{"stats", "--interval", "2s"},                     // needs --watch
		{"stats", "--watch", "--interval", "1ms"},         // too fast
		{"stats", "--watch", "--interval", "-1s"},         // negative
		{"stats", "--sla", "high"},                        // not level=duration
		{"stats", "--sla", "high=soon"},                   // not a duration
		{"stats", "--sla", "high=0s"},                     // not positive
		{"stats", "--sla", "high=1s,"},                    // empty pair
		{"stats", "--watch", "--redis", "http://x:1"},     // bad URL
		{"stats", "--watch", "--json", "--levels", "a,a"}, // bad levels
	} {
		_, errOut, code := runCLI(t, args...)
		if code != 2 || !strings.HasPrefix(errOut, "overtake stats: ") {
			t.Errorf("%q: code %d, want 2; stderr %q", args, code, errOut)
		}
	}
}
