package main

import (
	"context"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

func TestPauseResume(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		q := c.client()
		ctx := context.Background()
		paused := func(want map[int]queue.PauseMode) {
			t.Helper()
			got, err := q.Paused(ctx)
			if err != nil || !maps.Equal(got, want) {
				t.Fatalf("paused %v (%v), want %v", got, err, want)
			}
		}
		expect := func(out string, lines ...string) {
			t.Helper()
			if got := strings.Split(strings.TrimSpace(out), "\n"); strings.Join(got, "\n") != strings.Join(lines, "\n") {
				t.Fatalf("output\n%s\nwant\n%s", out, strings.Join(lines, "\n"))
			}
		}

		expect(c.ok("pause", "--level", "normal"),
			"level 1 (normal) paused; running tasks finish; new tasks are still accepted", "paused: normal (1)")
		paused(map[int]queue.PauseMode{1: queue.PauseWait})
		expect(c.ok("pause", "--level", "2", "--preempt"),
			"level 2 (high) paused; running tasks are preempted, checkpointed and requeued; new tasks are still accepted",
			"paused: high (2, preempt), normal (1)")
		paused(map[int]queue.PauseMode{1: queue.PauseWait, 2: queue.PausePreempt})

		// A paused level still accepts tasks; stats shows the states.
		c.ok("enqueue", "--type", "x", "--level", "normal")
		out := c.ok("stats")
		for _, re := range []string{
			`(?m)^\s*2\s+high\s+paused \(preempt\)\s+0\s`,
			`(?m)^\s*1\s+normal\s+paused\s+1\s`,
			`(?m)^\s*0\s+low\s+running\s+0\s`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("stats does not match %s:\n%s", re, out)
			}
		}

		expect(c.ok("resume", "--level", "high"),
			"level 2 (high) resumed; workers lease from it again within one wake-up", "paused: normal (1)")
		expect(c.ok("resume", "--level", "low"),
			"level 0 (low) resumed (it was not paused); workers lease from it again within one wake-up", "paused: normal (1)")
		paused(map[int]queue.PauseMode{1: queue.PauseWait})
		expect(c.ok("pause"), "all 3 levels paused; running tasks finish; new tasks are still accepted",
			"paused: high (2), normal (1), low (0)")
		paused(map[int]queue.PauseMode{0: queue.PauseWait, 1: queue.PauseWait, 2: queue.PauseWait})
		expect(c.ok("resume"), "all 3 levels resumed; workers lease from them again within one wake-up", "no level is paused")
		paused(map[int]queue.PauseMode{})

		// Named levels of another queue, opened by a worker, given by a
		// --levels that agrees, then read from Redis. (--levels on a name
		// never used records nothing: TestCLIRecordsNoShapeOfQueueInUse.)
		four, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "four", LevelNames: []string{"bulk", "std", "urgent", "page"}, Levels: 4})
		if err != nil {
			t.Fatal(err)
		}
		expect(c.ok("pause", "--queue", "four", "--levels", "bulk,std,urgent,page", "--level", "urgent", "--preempt"),
			"level 2 (urgent) paused; running tasks are preempted, checkpointed and requeued; new tasks are still accepted",
			"paused: urgent (2, preempt)")
		c.ok("resume", "--queue", "four", "--level", "page")
		c.ok("resume", "--queue", "four", "--level", "3")
		if got, err := four.Paused(ctx); err != nil || !maps.Equal(got, map[int]queue.PauseMode{2: queue.PausePreempt}) {
			t.Fatalf("queue four paused %v (%v)", got, err)
		}
		c.ok("resume", "--queue", "four")

		for _, args := range [][]string{
			{"pause", "--level", "urgent"},
			{"pause", "--level", "3"},
			{"pause", "--level", "-1"},
			{"pause", "--level", ""},
			{"resume", "--level", "1x"},
			{"resume", "--preempt"},
			{"pause", "now"},
			{"pause", "--levels", "0"},
		} {
			errOut := c.fail(2, args...)
			if !strings.Contains(errOut, "overtake "+args[0]+": ") {
				t.Errorf("%q: stderr %q", args, errOut)
			}
		}
		if errOut := c.fail(2, "pause", "--level", "urgent"); !strings.Contains(errOut, `no level "urgent" (have low,normal,high)`) {
			t.Errorf("unknown level message: %q", errOut)
		}
		paused(map[int]queue.PauseMode{})
	})
}
