package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/overtake/overtake/queue"
)

// sampleView is a fixed snapshot: level 2 paused with preemption, level 1
// paused, rates at level 1 and 0, one busy worker and one stopping.
func sampleView() statsView {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	return statsView{
		Namespace: "ns",
		Now:       now,
		Stats: &queue.Stats{Queue: "default", Workers: 2, PoolRates: map[string]queue.Rates{
			"high": {Processed: 2}, "bulk": {Processed: 0.5, Failed: 0.1, Preempted: 0.25}}, Levels: []queue.LevelStats{
			{Level: 0, Name: "low", Pending: 7, Active: 2, Dead: 1, Canceled: 5, OldestReadyAt: now.Add(-90 * time.Second),
				Rates: queue.Rates{Processed: 0.5, Preempted: 0.25}},
			{Level: 1, Name: "normal", Pending: 0, Scheduled: 3, Paused: queue.PauseWait,
				Rates: queue.Rates{Processed: 12.345, Failed: 0.1, SLABreaches: 0.05}},
			{Level: 2, Name: "high", Pending: 4, OldestReadyAt: now.Add(-1500 * time.Millisecond), Paused: queue.PausePreempt},
		}},
		Workers: []queue.WorkerInfo{
			{ID: "w-busy", Capacity: 8, Busy: 3, LastHeartbeat: now.Add(-2 * time.Second), AliveUntil: now.Add(28 * time.Second),
				Pools: []queue.WorkerPool{{Name: "high", Levels: []int{2}, Size: 6, Busy: 2}, {Name: "bulk", Levels: []int{0, 1}, Size: 2, Busy: 1}}},
			{ID: "w-stopping", Capacity: 0, Busy: 1, LastHeartbeat: now.Add(-12 * time.Second), AliveUntil: now.Add(18 * time.Second)},
		},
	}
}

func TestFrameLinesContent(t *testing.T) {
	v := sampleView()
	out := strings.Join(frameLines(v, 0), "\n")
	for _, re := range []string{
		`^queue "default" \(namespace "ns"\): 2 live workers\n\n`,
		`(?m)^\s*LEVEL\s+NAME\s+STATE\s+DEPTH\s+IN FLIGHT\s+SCHEDULED\s+DEAD\s+CANCELED\s+OLDEST WAIT\s+RATE/s\s+FAILED/s\s+PREEMPTED/s\s+BREACHES/min$`,
		`(?m)^\s*2\s+high\s+paused \(preempt\)\s+4\s+0\s+0\s+0\s+0\s+1.5s\s+0\s+0\s+0\s+0$`,
		`(?m)^\s*1\s+normal\s+paused\s+0\s+0\s+3\s+0\s+0\s+-\s+12.35\s+0.1\s+0\s+3$`,
		`(?m)^\s*0\s+low\s+running\s+7\s+2\s+0\s+1\s+5\s+1m30s\s+0.5\s+0\s+0.25\s+0$`,
		`(?m)^\s*total\s+11\s+2\s+3\s+1\s+5\s+12.85\s+0.1\s+0.25\s+3$`,
		`(?m)^rates: per second \(breaches per minute\) over the last 1m0s`,
		`(?m)^pools: bulk 0.5/s \(failed 0.1, preempted 0.25\); high 2/s \(failed 0, preempted 0\)$`,
		`(?m)^WORKER\s+SLOTS USED\s+HEARTBEAT\s+POOLS$`,
		`(?m)^w-busy\s+3/8\s+2s ago\s+high 2/6, bulk 1/2$`,
		`(?m)^w-stopping\s+1/0 \(stopping\)\s+12s ago\s+-$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("frame does not match %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "SLA ") || strings.Contains(out, "\x1b") {
		t.Errorf("no --sla, no escapes expected:\n%s", out)
	}
	// Most urgent first.
	if strings.Index(out, " high ") > strings.Index(out, " low ") {
		t.Errorf("levels out of order:\n%s", out)
	}

	v.SLA = map[int]time.Duration{2: time.Second, 0: 5 * time.Minute}
	out = strings.Join(frameLines(v, 0), "\n")
	for _, re := range []string{
		`(?m)^\s*LEVEL\s+NAME\s+STATE\s+DEPTH\s+IN FLIGHT\s+SCHEDULED\s+DEAD\s+CANCELED\s+OLDEST WAIT\s+SLA\s+RATE/s`,
		`(?m)^\s*2\s+high\s+paused \(preempt\)\s+4\s+0\s+0\s+0\s+0\s+1.5s\s+OVER 1s\s+0\s+0\s+0\s+0$`,
		`(?m)^\s*1\s+normal\s+paused\s+0\s+0\s+3\s+0\s+0\s+-\s+-\s+12.35`,
		`(?m)^\s*0\s+low\s+running\s+7\s+2\s+0\s+1\s+5\s+1m30s\s+5m0s\s+0.5`,
		`(?m)^\s*total\s+11\s+2\s+3\s+1\s+5\s+12.85\s+0.1\s+0.25\s+3$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("frame with --sla does not match %s:\n%s", re, out)
		}
	}
}

func TestFrameLinesTruncate(t *testing.T) {
	v := sampleView()
	v.Workers[0].ID = "wörker-ünicode-" + strings.Repeat("x", 100)
	full := frameLines(v, 0)
	for _, cols := range []int{1, 20, 40, 79} {
		lines := frameLines(v, cols)
		if len(lines) != len(full) {
			t.Fatalf("cols %d: %d lines, want %d", cols, len(lines), len(full))
		}
		for i, l := range lines {
			if n := utf8.RuneCountInString(l); n > cols {
				t.Errorf("cols %d: line %d has %d runes: %q", cols, i, n, l)
			}
			if !strings.HasPrefix(full[i], l) || !utf8.ValidString(l) {
				t.Errorf("cols %d: line %d %q is not a prefix of %q", cols, i, l, full[i])
			}
		}
	}
	if l := frameLines(v, 40)[0]; l != `queue "default" (namespace "ns"): 2 live` {
		t.Errorf("title cut to 40: %q", l)
	}
}

func TestTTYFrame(t *testing.T) {
	lines := []string{"title", strings.Repeat("a", 30), "", "last"}
	got := string(ttyFrame(lines, 10, 0))
	want := "\x1b[H" + "title\x1b[K\n" + "aaaaaaaaa\x1b[K\n" + "\x1b[K\n" + "last\x1b[K\n" + "\x1b[J"
	if got != want {
		t.Fatalf("frame\n%q, want\n%q", got, want)
	}
	if strings.Contains(got, "\x1b[2J") {
		t.Error("a frame must not clear the whole screen (flicker)")
	}
	// A short terminal shows the first rows-1 lines.
	if got := string(ttyFrame(lines, 80, 3)); got != "\x1b[Htitle\x1b[K\n"+strings.Repeat("a", 30)+"\x1b[K\n\x1b[J" {
		t.Errorf("3 rows: %q", got)
	}
}

func TestRateFormat(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 0.001: "<0.01", 0.016666: "0.02", 0.5: "0.5", 2: "2", 12.345: "12.35", 99.999: "100", 1234.4: "1234"} {
		if got := rate(x); got != want {
			t.Errorf("rate(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestStatsJSON(t *testing.T) {
	v := sampleView()
	v.SLA = map[int]time.Duration{2: time.Second}
	b, err := json.Marshal(v.toJSON())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Queue       string  `json:"queue"`
		Window      float64 `json:"rate_window_seconds"`
		LiveWorkers int     `json:"live_workers"`
		Levels      []map[string]any
		Workers     []map[string]any
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Queue != "default" || doc.Window != 60 || doc.LiveWorkers != 2 || len(doc.Levels) != 3 || len(doc.Workers) != 2 {
		t.Fatalf("doc %s", b)
	}
	hi, mid, lo := doc.Levels[2], doc.Levels[1], doc.Levels[0]
	check := func(m map[string]any, key string, want any) {
		t.Helper()
		if got, ok := m[key]; !ok && want != nil || ok && got != want {
			t.Errorf("level %v %s = %v (present %v), want %v", m["level"], key, got, ok, want)
		}
	}
	check(hi, "state", "paused (preempt)")
	check(hi, "paused", true)
	check(hi, "pause_mode", "preempt")
	check(hi, "pending", 4.0)
	check(hi, "oldest_wait_seconds", 1.5)
	check(hi, "sla_seconds", 1.0)
	check(hi, "sla_exceeded", true)
	check(mid, "pause_mode", "wait")
	check(mid, "oldest_wait_seconds", nil)
	check(mid, "sla_seconds", nil)
	check(lo, "state", "running")
	check(lo, "paused", false)
	check(lo, "pause_mode", nil)
	check(lo, "in_flight", 2.0)
	check(lo, "canceled", 5.0)
	check(hi, "canceled", 0.0)
	rates := mid["rates"].(map[string]any)
	if rates["processed_per_second"] != 12.345 || rates["failed_per_second"] != 0.1 || rates["sla_breaches_per_second"] != 0.05 {
		t.Errorf("rates %v", rates)
	}
	w := doc.Workers[0]
	if w["id"] != "w-busy" || w["capacity"] != 8.0 || w["busy"] != 3.0 || w["heartbeat_age_seconds"] != 2.0 ||
		w["last_heartbeat"] != "2026-05-01T11:59:58Z" {
		t.Errorf("worker %v", w)
	}
}
