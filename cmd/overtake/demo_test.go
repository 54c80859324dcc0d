package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDemo runs a short demo and checks what it printed: strict order,
// checkpoints, a preemption, a resume from the same point, the summary.
func TestDemo(t *testing.T) {
	const load, workers = 2, 2
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	started := time.Now()
	err := runDemo(ctx, demoOptions{Duration: 2 * time.Second, Load: load, Concurrency: workers, Seed: 7,
		OTLPProtocol: "grpc"}, &out, &errOut)
	text := out.String()
	t.Logf("demo output:\n%s", text)
	if err != nil {
		t.Fatalf("demo: %v (stderr %q)", err, errOut.String())
	}
	if el := time.Since(started); el > 8*time.Second {
		t.Errorf("a 2s demo took %v", el)
	}

	part1, part2, ok := strings.Cut(text, "== 2.")
	if !ok || !strings.Contains(part1, "== 1.") {
		t.Fatal("missing part headers")
	}
	// (a) Tasks are taken most urgent level first.
	rank := map[string]int{"low": 0, "normal": 1, "high": 2}
	taken := regexp.MustCompile(`(?m)^\s*\+\d+\.\d{3}s  [0-9a-f]{6}  (\w+)\s+\w+\s+taken$`)
	var levels []string
	for _, m := range taken.FindAllStringSubmatch(part1, -1) {
		levels = append(levels, m[1])
	}
	if len(levels) != 3*load {
		t.Fatalf("part 1 took %d tasks, want %d: %v", len(levels), 3*load, levels)
	}
	for i := 1; i < len(levels); i++ {
		if rank[levels[i]] > rank[levels[i-1]] {
			t.Fatalf("part 1 took a %s task after a %s one: %v", levels[i], levels[i-1], levels)
		}
	}

	// (b) The report checkpoints, is preempted and resumes where it stopped.
	for _, want := range []string{"progress  10% (checkpoint seq 1)", "is at 40% and every worker is busy", "urgent alert"} {
		if !strings.Contains(part2, want) {
			t.Errorf("part 2 lacks %q", want)
		}
	}
	pre := regexp.MustCompile(`report\s+preempted at (\d+)% \(checkpoint seq (\d+)\) for ([0-9a-f]{6})`).FindStringSubmatch(part2)
	res := regexp.MustCompile(`report\s+resumed from (\d+)% \(checkpoint seq (\d+)\)`).FindStringSubmatch(part2)
	if pre == nil || res == nil {
		t.Fatalf("no preemption or no resume in part 2")
	}
	if pre[1] != res[1] || pre[2] != res[2] {
		t.Errorf("preempted at %s%% (seq %s) but resumed from %s%% (seq %s)", pre[1], pre[2], res[1], res[2])
	}
	if pct, _ := strconv.Atoi(pre[1]); pct < 40 || pct == 100 {
		t.Errorf("preempted at %d%%, want from 40%% on", pct)
	}
	if !regexp.MustCompile(pre[3] + `\s+high\s+alert\s+taken`).MatchString(part2) {
		t.Errorf("the urgent task %s was not taken", pre[3])
	}
	if !strings.Contains(part2, "done: 100% after 1 preemption,") {
		t.Error("the report did not finish after its preemption")
	}
	iPre := strings.Index(part2, "preempted at")
	iRes := strings.Index(part2, "resumed from")
	if iRes < iPre {
		t.Error("resumed before it was preempted")
	}

	// The summary.
	for _, want := range []string{
		"== Summary after",
		"preemptions: 1 (runtime counted 1), resumes: 1,",
		"high         " + strconv.Itoa(load+1) + " ",
		"normal       " + strconv.Itoa(load+workers-1) + " ",
		"low          " + strconv.Itoa(load+1) + " ",
	} {
		if !strings.Contains(part2, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

// With one worker there is no filler task: the report alone is preempted.
func TestDemoOneWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	out, errOut, code := runCLI(t, "demo", "--duration", "1s", "--load", "1", "--concurrency", "1", "--seed", "3")
	if code != 0 {
		t.Fatalf("code %d, stderr %q\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "preemptions: 1 (runtime counted 1), resumes: 1,") {
		t.Fatalf("no preemption:\n%s", out)
	}
}
