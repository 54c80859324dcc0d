package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testworker"
	"github.com/overtake/overtake/queue"
)

// deadLetterNext leases the next task of q and dead-letters it with
// reason, as a worker whose handler gave up would.
func deadLetterNext(t *testing.T, q *queue.Client, reason string) string {
	t.Helper()
	ctx := context.Background()
	w := testworker.New(q, "w")
	leased, err := w.LeaseOne(ctx, 0)
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if err := w.DeadLetter(ctx, leased, reason); err != nil {
		t.Fatal(err)
	}
	return leased.ID
}

// $OVERTAKE_QUEUE and $OVERTAKE_NAMESPACE stand for --queue and
// --namespace, as $REDIS_URL does for --redis; a flag still wins.
func TestQueueFromEnvironment(t *testing.T) {
	b := testredis.Mini(t)
	t.Setenv(envRedisURL, "redis://"+b.Addr)
	t.Setenv(envNamespace, b.Prefix)
	t.Setenv(envQueue, "media")
	out, errOut, code := runCLI(t, "enqueue", "--type", "resize")
	if code != 0 {
		t.Fatalf("enqueue: exit %d, %s", code, errOut)
	}
	id := enqueuedID.FindStringSubmatch(out)[1]
	q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "media"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Inspect(context.Background(), id); err != nil {
		t.Errorf("the task is not in queue media of the namespace of $%s: %v", envNamespace, err)
	}
	if out, errOut, code = runCLI(t, "inspect", id); code != 0 || !strings.Contains(out, "resize") {
		t.Errorf("inspect with the queue from the environment: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code = runCLI(t, "inspect", id, "--queue", "other"); code != 1 || !strings.Contains(errOut, `"other"`) {
		t.Errorf("--queue must win over $%s: exit %d, %s", envQueue, code, errOut)
	}
	_, errOut, _ = runCLI(t, "stats", "-h")
	for _, want := range []string{"$" + envQueue, "$" + envNamespace} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stats -h does not name %s:\n%s", want, errOut)
		}
	}
}

// No help text shows the deprecated --levels and --classes: not the
// command list, not a command's, not a dead subcommand's.
func TestHelpHidesDeprecatedFlags(t *testing.T) {
	helps := [][]string{{"help"}, {"dead", "list", "-h"}, {"dead", "requeue", "-h"}, {"dead", "delete", "-h"}}
	for _, c := range commands {
		helps = append(helps, []string{c.name, "-h"})
	}
	for _, args := range helps {
		out, errOut, code := runCLI(t, args...)
		if code != 0 {
			t.Errorf("%q: exit %d", args, code)
		}
		for _, deprecated := range []string{"-levels", "-classes"} {
			if strings.Contains(out+errOut, deprecated) {
				t.Errorf("%q shows %s:\n%s%s", args, deprecated, out, errOut)
			}
		}
	}
}

// "dead list --json" prints the page as JSON, as queues and stats do.
func TestDeadListJSON(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		q := c.client()
		c.ok("enqueue", "--type", "job", "--level", "high", "--max-retries", "2")
		id := deadLetterNext(t, q, "boom")
		var doc struct {
			Queue string    `json:"queue"`
			Total int64     `json:"total"`
			Tasks []deadRow `json:"tasks"`
		}
		out := c.ok("dead", "list", "--json")
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("dead list --json: %v\n%s", err, out)
		}
		if doc.Queue != "default" || doc.Total != 1 || len(doc.Tasks) != 1 {
			t.Fatalf("dead list --json: %+v", doc)
		}
		r := doc.Tasks[0]
		if r.ID != id || r.Type != "job" || r.LevelName != "high" || r.Level != 2 || r.MaxRetries != 2 ||
			r.LastError != "boom" || r.EnqueuedAt == nil {
			t.Errorf("dead list --json row: %+v", r)
		}
		out = c.ok("dead", "list", "--json", "--offset", "1")
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Tasks) != 0 || doc.Tasks == nil {
			t.Errorf("past the end: %v %s", err, out)
		}
	})
}

// Each refusal names its cause and the knob that governs it.
func TestMessagesNameCauseAndKnob(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)

		// A uniqueness refusal is not a duplicate ID.
		c.ok("enqueue", "--type", "report", "--payload", `{"month":11}`, "--unique", "1h")
		errOut := c.fail(1, "enqueue", "--type", "report", "--payload", `{"month":11}`, "--unique", "1h")
		if strings.Contains(errOut, "ID already exists") || !strings.Contains(errOut, "uniqueness lock (Unique)") {
			t.Errorf("uniqueness refusal: %s", errOut)
		}
		c.ok("enqueue", "--type", "mail", "--id", "m-1")
		errOut = c.fail(1, "enqueue", "--type", "mail", "--id", "m-1")
		if !strings.Contains(errOut, `task ID "m-1" already exists`) || strings.Contains(errOut, "uniqueness") {
			t.Errorf("duplicate ID: %s", errOut)
		}
		c.fail(2, "enqueue", "--type", "mail", "--unique", "0s")

		// A payload over the limit names MaxPayloadBytes.
		big := filepath.Join(t.TempDir(), "big")
		if err := os.WriteFile(big, make([]byte, (queue.Config{}).WithDefaults().MaxPayloadBytes+1), 0o600); err != nil {
			t.Fatal(err)
		}
		errOut = c.fail(1, "enqueue", "--type", "mail", "--payload-file", big)
		if !strings.Contains(errOut, "MaxPayloadBytes") {
			t.Errorf("payload refusal: %s", errOut)
		}

		// A shape mismatch says how to fix it.
		errOut = c.fail(1, "stats", "--levels", "bulk,std")
		for _, want := range []string{"delete the shape key", "drop --levels and --classes"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("shape mismatch lacks %q: %s", want, errOut)
			}
		}

		// A dead task's attempts are counted against the runs allowed.
		q := c.client()
		id := deadLetterNext(t, q, "gave up")
		out := c.ok("inspect", id)
		want := fmt.Sprintf("failed of at most %d (the first run and %d retries)", queue.DefaultMaxRetries+1, queue.DefaultMaxRetries)
		if strings.Contains(out, "retries allowed") || !strings.Contains(out, want) {
			t.Errorf("inspect attempts:\n%s", out)
		}
	})
}

// attemptsText never says "1 retries" nor counts runs against retries.
func TestAttemptsText(t *testing.T) {
	for _, tc := range []struct {
		failed, max int
		want        string
	}{
		{0, 0, "0 failed of at most 1 (the first run and 0 retries)"},
		{1, 1, "1 failed of at most 2 (the first run and 1 retry)"},
		{3, 2, "3 failed of at most 3 (the first run and 2 retries)"},
	} {
		if got := attemptsText(tc.failed, tc.max); got != tc.want {
			t.Errorf("attemptsText(%d, %d) = %q, want %q", tc.failed, tc.max, got, tc.want)
		}
	}
}
