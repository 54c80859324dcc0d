package main

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// fiveLevels makes queue "five" of 5 levels, as a worker would, with one
// task pending at each of levels 3 and 4 and two at level 0.
func fiveLevels(t *testing.T, b testredis.Backend) {
	t.Helper()
	q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "five", Levels: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []int{0, 0, 3, 4} {
		if _, err := q.Enqueue(context.Background(), queue.NewTask("x", nil), queue.Level(l)); err != nil {
			t.Fatal(err)
		}
	}
}

// stats, inspect and enqueue read a queue's levels from Redis: stats on a
// queue of 5 levels shows all 5 without --levels (3 by default before, so
// the tasks at levels 3 and 4 were hidden), and a --levels that disagrees
// fails naming both shapes.
func TestStatsReadsShape(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		fiveLevels(t, b)
		out := c.ok("stats", "--queue", "five")
		for _, re := range []string{
			`(?m)^\s*4\s+4\s+running\s+1\s`, `(?m)^\s*3\s+3\s+running\s+1\s`, `(?m)^\s*0\s+0\s+running\s+2\s`,
			`(?m)^\s*total\s+4\s`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("stats does not match %s:\n%s", re, out)
			}
		}
		out = c.ok("enqueue", "--queue", "five", "--type", "x", "--level", "4")
		if !strings.Contains(out, "level 4 (4), pending") {
			t.Errorf("enqueue at level 4: %q", out)
		}
		errOut := c.fail(1, "stats", "--queue", "five", "--levels", "3")
		for _, want := range []string{`holds {"schema":2,"levels":["0","1","2","3","4"]}`,
			`this config has {"schema":2,"levels":["low","normal","high"]}`} {
			if !strings.Contains(errOut, want) {
				t.Errorf("mismatch message %q lacks %q", errOut, want)
			}
		}
		c.ok("stats", "--queue", "five", "--levels", "5") // a --levels that agrees
		// --sla names the queue's levels.
		c.ok("stats", "--queue", "five", "--sla", "4=1s")
		c.fail(2, "stats", "--queue", "five", "--sla", "high=1s")
		c.fail(2, "stats", "--queue", "five", "--sla", "4=1s,4=3s")
	})
}

// A command on a queue Redis holds no shape of says so, names the queues
// it found and exits 1; enqueue creates one, like a producer's queue.New,
// with the shape of --levels.
func TestMissingQueue(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		errOut := c.fail(1, "stats", "--queue", "media")
		if want := `no such queue: "media" in namespace "` + b.Prefix + `" (it has no queue)`; !strings.Contains(errOut, want) {
			t.Errorf("empty namespace: %q lacks %q", errOut, want)
		}
		fiveLevels(t, b)
		c.client() // the default queue
		for _, args := range [][]string{
			{"stats", "--queue", "media"}, {"inspect", "x", "--queue", "media"}, {"dead", "list", "--queue", "media"},
			{"pause", "--queue", "media"}, {"console", "--queue", "media"},
		} {
			errOut := c.fail(1, args...)
			if want := `no such queue: "media" in namespace "` + b.Prefix + `" (its queues: default, five)`; !strings.Contains(errOut, want) {
				t.Errorf("%q: %q lacks %q", args, errOut, want)
			}
		}
		c.ok("enqueue", "--type", "x", "--queue", "media", "--levels", "2")
		c.ok("enqueue", "--type", "x", "--queue", "mail")
		if out := c.ok("stats", "--queue", "mail"); !regexp.MustCompile(`(?m)^\s*0\s+low\s+running\s+1\s`).MatchString(out) {
			t.Errorf("stats of the queue enqueue created:\n%s", out)
		}
		if out := c.ok("stats", "--queue", "media"); !regexp.MustCompile(`(?m)^\s*1\s+1\s+running\s+0\s`).MatchString(out) {
			t.Errorf("stats of the created queue:\n%s", out)
		}
	})
}

// The CLI records no shape for a queue in use that has none (opened only
// by an Overtake recording no shapes, here a 5-level queue whose shape key
// is gone) unless --levels gives its levels: enqueue, or --classes alone,
// would record 3 levels and break its workers. A name never used gets no
// shape from --levels either (a mistyped --queue leaves no phantom queue),
// only from enqueue's quick start.
func TestCLIRecordsNoShapeOfQueueInUse(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		c := newCLI(t, b)
		fiveLevels(t, b)
		shapeKey := "{" + b.Prefix + ":five}:shape"
		if err := b.Client.Del(ctx, shapeKey).Err(); err != nil {
			t.Fatal(err)
		}
		noShape := func(name string, after []string) {
			t.Helper()
			if _, err := queue.ReadShape(ctx, b.Client, b.Prefix, name); !errors.Is(err, queue.ErrNoQueue) {
				t.Errorf("after %q: queue %q has a shape (%v)", after, name, err)
			}
		}
		for _, args := range [][]string{
			{"enqueue", "--type", "x", "--queue", "five"},
			{"enqueue", "--type", "x", "--queue", "five", "--classes", "paying=2"},
			{"stats", "--queue", "five", "--classes", "paying=2"},
		} {
			errOut := c.fail(1, args...)
			if want := `"five" in namespace "` + b.Prefix + `" holds tasks but no recorded shape`; !strings.Contains(errOut, want) {
				t.Errorf("%q: %q lacks %q", args, errOut, want)
			}
			noShape("five", args)
		}
		for _, args := range [][]string{
			{"stats", "--queue", "fivee", "--levels", "3"}, {"pause", "--queue", "fivee", "--classes", "a=1"},
		} {
			c.fail(1, args...)
			noShape("fivee", args)
		}

		c.ok("stats", "--queue", "five", "--levels", "5")
		sh, err := queue.ReadShape(ctx, b.Client, b.Prefix, "five")
		if err != nil || len(sh.LevelNames) != 5 {
			t.Errorf("--levels 5 recorded %v (%v)", sh, err)
		}
		c.ok("enqueue", "--type", "x", "--queue", "new")
		if _, err := queue.ReadShape(ctx, b.Client, b.Prefix, "new"); err != nil {
			t.Errorf("enqueue on a name never used: %v", err)
		}
	})
}
