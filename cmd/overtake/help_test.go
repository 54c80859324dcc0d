package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/overtake/overtake/queue"
)

// TestHelpTexts: "dead list -h" shows list's synopsis once, and
// "enqueue -h" shows --max-retries' default once.
func TestHelpTexts(t *testing.T) {
	_, errOut, code := runCLI(t, "dead", "list", "-h")
	if code != 0 || !strings.Contains(errOut, "Usage: overtake dead list [--limit N] [--offset N] [--json] [flags]\n") ||
		strings.Contains(errOut, "list list") {
		t.Errorf("dead list -h: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, "dead", "requeue", "-h")
	if code != 0 || !strings.Contains(errOut, "Usage: overtake dead requeue [--reset-checkpoint] [flags] ID...\n") {
		t.Errorf("dead requeue -h: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, "enqueue", "-h")
	want := fmt.Sprintf("dead-lettering (default %d)\n", queue.DefaultMaxRetries)
	if code != 0 || strings.Contains(errOut, "(default -1)") || !strings.Contains(errOut, want) {
		t.Errorf("enqueue -h: exit %d\n%s", code, errOut)
	}
}

// TestQueueFlags: the requeue hint names only the flags that differ from
// the defaults, besides --queue, quoted for a shell where needed; never
// --levels, which Redis holds.
func TestQueueFlags(t *testing.T) {
	rf := &redisFlags{namespace: "overtake", queue: "default", levels: "3"}
	if got := rf.queueFlags(); got != " --queue default" {
		t.Errorf("default queue: %q", got)
	}
	rf = &redisFlags{namespace: "my ns", queue: "media", levels: "bulk,std,urgent"}
	if got := rf.queueFlags(); got != " --queue media --namespace 'my ns'" {
		t.Errorf("custom queue: %q", got)
	}
}
