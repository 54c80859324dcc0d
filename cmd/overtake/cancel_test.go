package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testworker"
	"github.com/overtake/overtake/queue"
)

// Every answer of cancel, by the state the task was in, with its exit
// status, on miniredis and on a real Redis.
func TestCancelCommand(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		q := c.client()
		ctx := context.Background()
		state := func(id string, want queue.State) {
			t.Helper()
			tk, err := q.Inspect(ctx, id)
			if err != nil || tk.State != want {
				t.Fatalf("task %s: %+v %v, want state %s", id, tk, err, want)
			}
		}
		line := func(out, want string) {
			t.Helper()
			if strings.TrimSpace(out) != want {
				t.Fatalf("output %q\nwant   %q", out, want)
			}
		}

		// Waiting tasks are canceled at once, and say so once.
		c.ok("enqueue", "--type", "email", "--level", "high", "--id", "pend-1")
		line(c.ok("cancel", "pend-1"), "canceled pend-1: it was pending at level high and will not run")
		state("pend-1", queue.StateCanceled)
		line(c.ok("cancel", "pend-1"), "pend-1 was already canceled; nothing to do")
		c.ok("enqueue", "--type", "email", "--level", "low", "--id", "later-1", "--delay", "1h")
		line(c.ok("cancel", "later-1"), "canceled later-1: it was scheduled at level low and will not run")
		state("later-1", queue.StateCanceled)

		// A running task: its cancel is requested; the run ends canceled.
		c.ok("enqueue", "--type", "export", "--level", "normal", "--id", "run-1")
		w := testworker.New(q, "w1")
		leased, err := w.LeaseOne(ctx, 0)
		if err != nil || leased.ID != "run-1" {
			t.Fatalf("lease: %v %v", leased, err)
		}
		line(c.ok("cancel", "run-1"), "cancel requested for run-1, running on worker w1: its context is cancelled now, "+
			"and the task ends canceled when its handler returns (done, if it had already succeeded); overtake inspect run-1 says which")
		state("run-1", queue.StateActive)
		if out := c.ok("inspect", "run-1"); !strings.Contains(out, "cancel asked ") ||
			!strings.Contains(out, "it ends canceled when its handler returns") {
			t.Errorf("inspect of a running task whose cancel was requested:\n%s", out)
		}
		// Its handler returned an error: the run ends canceled, not dead.
		if err := w.DeadLetter(ctx, leased, "context canceled"); err == nil || !strings.Contains(err.Error(), "ended canceled") {
			t.Fatalf("dead-letter of a task whose cancel was requested: %v", err)
		}
		state("run-1", queue.StateCanceled)
		line(c.ok("cancel", "run-1"), "run-1 was already canceled; nothing to do")
		if out := c.ok("inspect", "run-1"); !strings.Contains(out, "state        canceled (by overtake cancel or Client.Cancel: it will not run again)") {
			t.Errorf("inspect of a canceled task:\n%s", out)
		}

		// Finished and unknown tasks: exit 1, saying which.
		dead := c.deadTask("bad-1")
		errOut := c.fail(1, "cancel", dead)
		if want := `overtake cancel: task finished: "bad-1" is dead; there is nothing to cancel` + "\n"; errOut != want {
			t.Errorf("cancel of a dead task: %q", errOut)
		}
		state(dead, queue.StateDead)
		errOut = c.fail(1, "cancel", "nope")
		if want := `overtake cancel: task not found: "nope" in queue "default" (namespace "` + b.Prefix + `")` + "\n"; errOut != want {
			t.Errorf("cancel of an unknown task: %q lacks %q", errOut, want)
		}
		c.fail(2, "cancel")
		c.fail(2, "cancel", "--level", "high", "x")

		// Several IDs: each answered, exit 1 when one failed.
		c.ok("enqueue", "--type", "email", "--id", "pend-2")
		out, errOut, code := runCLI(t, append([]string{"cancel", "pend-2", "nope", "pend-1"}, c.conn...)...)
		if code != 1 || !strings.Contains(out, "canceled pend-2: it was pending at level low") ||
			!strings.Contains(out, "pend-1 was already canceled") || !strings.Contains(errOut, `"nope"`) {
			t.Errorf("several IDs: exit %d\n%s\n%s", code, out, errOut)
		}

		// A done task, its record kept by its worker's Retention (its ack
		// deletes the canceled records above, which were kept for none).
		kept, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Retention: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		c.ok("enqueue", "--type", "email", "--id", "sent-1")
		wk := testworker.New(kept, "w2")
		sent, err := wk.LeaseOne(ctx, 0)
		if err != nil || sent.ID != "sent-1" {
			t.Fatalf("lease: %v %v", sent, err)
		}
		if err := wk.Ack(ctx, sent); err != nil {
			t.Fatal(err)
		}
		if errOut := c.fail(1, "cancel", "sent-1"); errOut != `overtake cancel: task finished: "sent-1" is done; there is nothing to cancel`+"\n" {
			t.Errorf("cancel of a done task: %q", errOut)
		}
		state("sent-1", queue.StateDone)

		// The counts per level.
		out = c.ok("stats")
		for _, re := range []string{
			`(?m)^\s*LEVEL\s+NAME\s+STATE\s+DEPTH\s+IN FLIGHT\s+SCHEDULED\s+DEAD\s+CANCELED\s+OLDEST WAIT`,
			`(?m)^\s*2\s+high\s+running\s+0\s+0\s+0\s+\d+\s+1\s`,
			`(?m)^\s*1\s+normal\s+running\s+0\s+0\s+0\s+0\s+1\s`,
			`(?m)^\s*0\s+low\s+running\s+0\s+0\s+0\s+0\s+2\s`,
			`(?m)^\s*total\s+0\s+0\s+0\s+1\s+4\s`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("stats does not match %s:\n%s", re, out)
			}
		}
	})
}

// cancel --json: one document with the outcome of each task.
func TestCancelJSON(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		q := c.client()
		ctx := context.Background()
		dead := c.deadTask("d")
		c.ok("enqueue", "--type", "email", "--level", "low", "--id", "r")
		w := testworker.New(q, "w9")
		if leased, err := w.LeaseOne(ctx, 0); err != nil || leased.ID != "r" {
			t.Fatalf("lease: %v %v", leased, err)
		}
		c.ok("enqueue", "--type", "email", "--level", "high", "--id", "a")
		out, errOut, code := runCLI(t, append([]string{"cancel", "--json", "a", "r", "a", dead, "nope"}, c.conn...)...)
		if code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, errOut)
		}
		var doc struct {
			Namespace string         `json:"namespace"`
			Queue     string         `json:"queue"`
			Tasks     []cancelResult `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if doc.Namespace != b.Prefix || doc.Queue != "default" || len(doc.Tasks) != 5 {
			t.Fatalf("doc:\n%s", out)
		}
		want := []struct{ id, outcome, was, state, level, worker string }{
			{"a", cancelCanceled, "pending", "canceled", "high", ""},
			{"r", cancelRequested, "active", "active", "low", "w9"},
			{"a", cancelAlready, "canceled", "canceled", "high", ""},
			{dead, cancelFinished, "dead", "dead", "high", ""},
			{"nope", cancelNotFound, "", "", "", ""},
		}
		for i, w := range want {
			g := doc.Tasks[i]
			if g.ID != w.id || g.Outcome != w.outcome || g.Was != w.was || g.State != w.state || g.LevelName != w.level ||
				g.Worker != w.worker || (g.Error != "") != (i >= 3) {
				t.Errorf("task %d: %+v, want %+v", i, g, w)
			}
		}
		if !strings.HasPrefix(doc.Tasks[4].Error, `task not found: "nope"`) || doc.Tasks[3].Error != `task finished: "d" is dead; there is nothing to cancel` {
			t.Errorf("errors: %q, %q", doc.Tasks[3].Error, doc.Tasks[4].Error)
		}
	})
}

// deadTask makes a dead letter at level high with id and returns id.
func (c *cli) deadTask(id string) string {
	c.t.Helper()
	c.ok("enqueue", "--type", "import", "--level", "high", "--id", id)
	w := testworker.New(c.client(), "w-dead")
	leased, err := w.LeaseOne(context.Background(), 2)
	if err != nil || leased.ID != id {
		c.t.Fatalf("lease %s: %v %v", id, leased, err)
	}
	if err := w.DeadLetter(context.Background(), leased, "bad input"); err != nil {
		c.t.Fatal(err)
	}
	return id
}

// The line printed for each outcome of a cancel that did not fail.
func TestCancelText(t *testing.T) {
	lvl := 1
	for _, tc := range []struct {
		r    cancelResult
		want string
	}{
		{cancelResult{ID: "a", Outcome: cancelCanceled, Was: "pending", Level: &lvl, LevelName: "normal"},
			"canceled a: it was pending at level normal and will not run"},
		{cancelResult{ID: "a", Outcome: cancelCanceled, Was: "retry", LevelName: "normal"},
			"canceled a: it was waiting to retry at level normal and will not run"},
		{cancelResult{ID: "a", Outcome: cancelCanceled, Was: "active", Worker: "w1"},
			"canceled a: it was running on worker w1 and its handler has returned; it will not run again"},
		{cancelResult{ID: "a", Outcome: cancelRequested, Was: "active", Worker: "w1"},
			"cancel requested for a, running on worker w1: its context is cancelled now, and the task ends canceled " +
				"when its handler returns (done, if it had already succeeded); overtake inspect a says which"},
		{cancelResult{ID: "a", Outcome: cancelLost, Was: "active", Worker: "w1"},
			"cancel requested for a, but its handler on worker w1 succeeded first: the task is done, not canceled"},
		{cancelResult{ID: "a", Outcome: cancelAlready, Was: "canceled"}, "a was already canceled; nothing to do"},
	} {
		if got := tc.r.text(); got != tc.want {
			t.Errorf("%+v:\n got  %q\n want %q", tc.r, got, tc.want)
		}
	}
}
