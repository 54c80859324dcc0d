package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// queues lists every queue of the namespace with its depth per level,
// most urgent first, and only those of the namespace.
func TestQueuesCommand(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		if out := c.ok("queues"); out != `namespace "`+b.Prefix+`" has no queues`+"\n" {
			t.Errorf("no queues: %q", out)
		}
		fiveLevels(t, b)
		c.ok("enqueue", "--type", "x", "--level", "high")
		if _, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix + "-other"}); err != nil {
			t.Fatal(err)
		}
		out := c.ok("queues")
		for _, re := range []string{
			`namespace "` + regexp.QuoteMeta(b.Prefix) + `": 2 queues\n`,
			`(?m)^QUEUE\s+LEVELS\s+DEPTH\s+IN FLIGHT\s+SCHEDULED\s+DEAD\s+DEPTH PER LEVEL \(most urgent first\)$`,
			`(?m)^default\s+3\s+1\s+0\s+0\s+0\s+high=1 normal=0 low=0$`,
			`(?m)^five\s+5\s+4\s+0\s+0\s+0\s+4=1 3=1 2=0 1=0 0=2$`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("queues does not match %s:\n%s", re, out)
			}
		}
		var doc struct {
			Queues []queueRow `json:"queues"`
		}
		if err := json.Unmarshal([]byte(c.ok("queues", "--json")), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Queues) != 2 || doc.Queues[1].Queue != "five" || len(doc.Queues[1].Levels) != 5 ||
			doc.Queues[1].Levels[4].Depth != 1 || doc.Queues[1].Pending != 4 {
			t.Errorf("queues --json: %+v", doc.Queues)
		}

		// A corrupt shape is shown on its row; the other queues still are.
		ctx := context.Background()
		for name, val := range map[string]string{"bad": "[]", "big": `{"schema":2,"levels":[` + strings.Repeat(`"x",`, 70) + `"y"]}`} {
			if err := b.Client.Set(ctx, "{"+b.Prefix+":"+name+"}:shape", val, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Client.RPush(ctx, "{"+b.Prefix+":alist}:shape", "x").Err(); err != nil {
			t.Fatal(err)
		}
		out = c.ok("queues")
		for _, re := range []string{
			`namespace "` + regexp.QuoteMeta(b.Prefix) + `": 5 queues\n`,
			`(?m)^alist\s+-\s+-\s+-\s+-\s+-\s+unreadable: .*corrupt`,
			`(?m)^bad\s+-\s+-\s+-\s+-\s+-\s+unreadable: .*not a queue shape`,
			`(?m)^big\s+-\s+-\s+-\s+-\s+-\s+unreadable: .*Levels must be 1\.\.64`,
			`(?m)^five\s+5\s+4\s`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("queues with corrupt shapes does not match %s:\n%s", re, out)
			}
		}
		if err := json.Unmarshal([]byte(c.ok("queues", "--json")), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Queues) != 5 || doc.Queues[1].Queue != "bad" || doc.Queues[1].Error == "" || doc.Queues[4].Error != "" {
			t.Errorf("queues --json with corrupt shapes: %+v", doc.Queues)
		}
	})
}
