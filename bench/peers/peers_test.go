package main

import (
	"bufio"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseCommandStats(t *testing.T) {
	raw := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=10,usec=5,usec_per_call=0.50,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_set:calls=7,usec=1,usec_per_call=0.14,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|resetstat:calls=1,usec=2,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" +
		"used_memory:5\r\ncmdstat_broken\r\n"
	got := parseCommandStats(raw)
	want := map[string]int64{"evalsha": 10, "set": 7, "config|resetstat": 1}
	if len(got) != len(want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: %d calls, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if v, ok := infoField("# CPU\r\nused_cpu_sys:1.25\r\nused_cpu_user:0.5\r\n", "used_cpu_user"); !ok || v != "0.5" {
		t.Fatalf("infoField = %q, %v", v, ok)
	}
}

func TestMedianAndPercentile(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 2, 3}, 2.5}, {[]float64{7}, 7}, {nil, 0}} {
		if m := median(c.xs); m != c.want {
			t.Fatalf("median(%v) = %v, want %v", c.xs, m, c.want)
		}
	}
	ds := make([]time.Duration, 100) // 100 ms down to 1 ms
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond
	}
	for p, want := range map[float64]float64{50: 50, 99: 99, 100: 100, 0: 1} {
		if got := percentile(ds, p); got != want {
			t.Fatalf("p%v = %v ms, want %v", p, got, want)
		}
	}
	five := []time.Duration{5 * time.Millisecond, time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}
	if p50, p99 := percentile(five, 50), percentile(five, 99); p50 != 3 || p99 != 5 {
		t.Fatalf("5 samples: p50 %v, p99 %v, want 3 and 5", p50, p99)
	}
}

func TestTable(t *testing.T) {
	nan := math.NaN()
	r := &results{names: []string{"asynq", "BullMQ", "Overtake"}, rounds: map[string][]figures{
		"asynq": {{mem: 600, cmds: 17, enq: 40, c16: 100, urgent99: 2000, enqRedis: 160, enqClient: 190, batch: nan},
			{mem: 640, cmds: 21, enq: 60, c16: 100, urgent99: 1900, enqRedis: 168, enqClient: 196, batch: nan}},
		"BullMQ": {{mem: 900, cmds: 30, enq: 20, c16: 100, urgent99: 2500, enqRedis: 320, enqClient: 420, batch: 5000},
			{mem: 1000, cmds: 32, enq: 30, c16: 100, urgent99: 2400, enqRedis: 328, enqClient: 430, batch: 5000}},
		"Overtake": {{mem: 300, cmds: 9, enq: 45, c16: 100, urgent99: 0.5, enqRedis: 118, enqClient: 134, batch: 90000},
			{mem: 320, cmds: 9.5, enq: 100, c16: 200, urgent99: 0.3, enqRedis: 118, enqClient: 134, batch: 90000}},
	}}
	tab := r.table(options{waitCap: time.Second}, runEnv{asynq: "v0.26.0", bullmq: "6.7.6 (node v20.20.2)",
		overtake: "abc1234", command: command([]string{"-quick"}, true)})
	for _, want := range []string{
		"| figure | asynq | BullMQ | Overtake | Overtake / asynq | Overtake / BullMQ | target (Overtake) | met |\n|---|---:|---:|---:|---:|---:|---|---|\n",
		"| Redis used_memory per pending task (100-byte payload; client buffers excluded) | 620 B | 950 B | 310 B | 0.50 | 0.33 | ≤ 350 | yes |",
		"| 19 cmds | 31 cmds | 9.25 cmds | 0.49 | 0.30 | ≤ 8 | **no** |",
		"| 0.5 | 0.25 | 0.475 | 0.95 | 1.90 | ≥ 0.8 | **no** |", // each round over its own ceiling: medians of 0.4, 0.6; 0.2, 0.3 and 0.45, 0.5
		"| 1950 ms | 2450 ms | 0.4 ms | 1/4875 | 1/6125 | < 5 | yes |",
		"| single Enqueue run: Redis + producer CPU per 10k tasks | 357 ms | 749 ms | 252 ms | 0.71 | 0.34 |  |  |",
		"| batch enqueue (EnqueueBatch / addBulk of 100 tasks), 16 callers | n/a | 5000 tasks/s | 90000 tasks/s | — | 18.00 |  |  |",
		"Every round, asynq / BullMQ / Overtake:",
		"- Redis used_memory per pending task (100-byte payload; client buffers excluded): 600, 640 / 900, 1000 / 300, 320\n",
		"asynq v0.26.0, BullMQ 6.7.6 (node v20.20.2), Overtake abc1234 on one",
		"Command: `make bench-peers BENCH_PEERS_ARGS='-quick'`, that is `cd bench/peers && go run . -quick`\n",
	} {
		if !strings.Contains(tab, want) {
			t.Fatalf("table lacks %q:\n%s", want, tab)
		}
	}
}

func TestTableWithoutBullMQ(t *testing.T) {
	r := &results{names: []string{"asynq", "Overtake"}, rounds: map[string][]figures{
		"asynq":    {{mem: 600, cmds: 17, enq: 40, c16: 100, urgent99: 2000}, {mem: 640, cmds: 21, enq: 60, c16: 100, urgent99: 1900}},
		"Overtake": {{mem: 300, cmds: 9, enq: 45, c16: 100, urgent99: 0.5}, {mem: 320, cmds: 9.5, enq: 100, c16: 200, urgent99: 0.3}},
	}}
	tab := r.table(options{waitCap: time.Second}, runEnv{asynq: "v0.26.0", overtake: "abc1234", skipped: "node not found",
		command: command([]string{"-quick"}, true)})
	for _, want := range []string{
		"| figure | asynq | Overtake | Overtake / asynq | target (Overtake) | met |\n|---|---:|---:|---:|---|---|\n",
		"| Redis used_memory per pending task (100-byte payload; client buffers excluded) | 620 B | 310 B | 0.50 | ≤ 350 | yes |",
		"| 19 cmds | 9.25 cmds | 0.49 | ≤ 8 | **no** |",
		"| 0.5 | 0.475 | 0.95 | ≥ 0.8 | **no** |", // each round over its own ceiling: medians of 0.4, 0.6 and 0.45, 0.5
		"| 1950 ms | 0.4 ms | 1/4875 | < 5 | yes |",
		"- Redis used_memory per pending task (100-byte payload; client buffers excluded): 600, 640 / 300, 320\n",
		"asynq v0.26.0, Overtake abc1234 on one",
		"BullMQ was not measured: node not found.",
		"Command: `make bench-peers BENCH_PEERS_ARGS='-quick'`, that is `cd bench/peers && go run . -quick`\n",
	} {
		if !strings.Contains(tab, want) {
			t.Fatalf("table lacks %q:\n%s", want, tab)
		}
	}
	if strings.Contains(tab, "| BullMQ |") || strings.Contains(tab, "Overtake / BullMQ") {
		t.Fatalf("a skipped BullMQ has a column:\n%s", tab)
	}
}

func TestSideResult(t *testing.T) {
	r, err := parseSideResult([]byte(`{"rate":2444.5,"cpu_ms":632.5,"left":2}`))
	if err != nil || r.Rate != 2444.5 || r.CPUms != 632.5 || r.Left != 2 {
		t.Fatalf("parsed %+v, %v", r, err)
	}
	r, err = parseSideResult([]byte(`{"lat_ms":[1.5,60],"capped":1}`))
	if lat := r.latencies(); err != nil || len(lat) != 2 || lat[0] != 1500*time.Microsecond ||
		lat[1] != 60*time.Millisecond || r.Capped != 1 {
		t.Fatalf("parsed %+v (latencies %v), %v", r, r.latencies(), err)
	}
	if _, err := parseSideResult([]byte(`{"error":"Error: drain: not done"}`)); err == nil ||
		!strings.Contains(err.Error(), "drain: not done") {
		t.Fatalf("an error line gives %v", err)
	}
	if _, err := parseSideResult([]byte(`{"rate":`)); err == nil {
		t.Fatal("a torn line parses")
	}
	// next skips what is not a JSON line (a library's console.log), and
	// says so when the process ends without a result.
	s := &sidecar{lines: bufio.NewScanner(strings.NewReader("a warning\n{\"ready\":true}\n\n{\"left\":3}\n"))}
	if r, err := s.next(); err != nil || !r.Ready {
		t.Fatalf("first line %+v, %v", r, err)
	}
	if r, err := s.next(); err != nil || r.Left != 3 {
		t.Fatalf("second line %+v, %v", r, err)
	}
	if _, err := s.next(); err == nil || !strings.Contains(err.Error(), "without a result") {
		t.Fatalf("after the last line: %v", err)
	}
}

func TestBullMQSkippedWithoutNode(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if v, err := setupBullMQ(); err == nil || err.Error() != "node not found" {
		t.Fatalf("setupBullMQ without node = %q, %v", v, err)
	}
}

func TestRatioAndTarget(t *testing.T) {
	for _, c := range []struct {
		ov, a float64
		want  string
	}{{1, 2, "0.50"}, {6, 1, "6.00"}, {0.2, 2000, "1/10000"}, {1, 0, "—"}, {0, 5, "0.00"}} {
		if got := ratio(c.ov, c.a); got != c.want {
			t.Fatalf("ratio(%v, %v) = %q, want %q", c.ov, c.a, got, c.want)
		}
	}
	if !(target{"≤", 350}).met(350) || (target{"<", 5}).met(5) || !(target{"≥", 0.8}).met(0.81) {
		t.Fatal("target.met is wrong at a bound")
	}
	if s := (target{"≥", 0.8}).String(); s != "≥ 0.8" {
		t.Fatalf("target = %q", s)
	}
}

func TestQuickKeepsExplicitFlags(t *testing.T) {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o, err := parseFlags(fs, []string{"-quick", "-rounds", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if o.rounds != 2 || o.memTasks != 5000 || o.idle != 2*time.Second {
		t.Fatalf("quick with -rounds 2: rounds %d, mem tasks %d, idle %v", o.rounds, o.memTasks, o.idle)
	}
	if o, _ = parseFlags(flag.NewFlagSet("peers", flag.ContinueOnError), nil); o.rounds != 3 || o.memTasks != 50_000 {
		t.Fatalf("defaults: rounds %d, mem tasks %d", o.rounds, o.memTasks)
	}
}

func TestChartsRender(t *testing.T) {
	r := &results{names: []string{"asynq", "BullMQ", "Overtake"}, rounds: map[string][]figures{
		"asynq":    {{mem: 615, cmds: 21, cpu: 851, enq: 50, c16: 85, drain: 7, c64: 84, idle: 13, urgent50: 1000, urgent99: 2000, wake50: 600, wake99: 1200}},
		"BullMQ":   {{mem: 900, cmds: 30, cpu: 995, enq: 20, c16: 85, drain: 14, c64: 84, idle: 1.6, urgent50: 1000, urgent99: 1900, wake50: 1, wake99: 60}},
		"Overtake": {{mem: 319, cmds: 5.9, cpu: 322, enq: 48, c16: 85, drain: 37, c64: 84, idle: 1.9, urgent50: 0.18, urgent99: 0, wake50: 0.16, wake99: 0.3}},
	}}
	dir := t.TempDir()
	if err := r.charts(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range chartList {
		st, err := os.Stat(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() < 1000 || st.Size() > 100_000 {
			t.Fatalf("%s is %d bytes", c.file, st.Size())
		}
	}
}
