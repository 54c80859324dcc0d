package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testworker"
	"github.com/overtake/overtake/queue"
	"github.com/redis/go-redis/v9"
)

// cli runs commands against one backend, in a namespace of its own.
type cli struct {
	t    *testing.T
	b    testredis.Backend
	conn []string
}

func newCLI(t *testing.T, b testredis.Backend) *cli {
	return &cli{t: t, b: b, conn: []string{"--redis", "redis://" + b.Addr, "--namespace", b.Prefix}}
}

// ok runs a command that must succeed and returns its stdout.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := runCLI(c.t, append(args, c.conn...)...)
	if code != 0 {
		c.t.Fatalf("%q: exit %d, stderr %q", args, code, errOut)
	}
	return out
}

// fail runs a command that must fail with code and returns its stderr.
func (c *cli) fail(code int, args ...string) string {
	c.t.Helper()
	_, errOut, got := runCLI(c.t, append(args, c.conn...)...)
	if got != code {
		c.t.Fatalf("%q: exit %d, want %d; stderr %q", args, got, code, errOut)
	}
	return errOut
}

// client returns a queue client of the CLI's default queue, as a worker.
func (c *cli) client() *queue.Client {
	q, err := queue.New(c.b.Client, queue.Config{Namespace: c.b.Prefix})
	if err != nil {
		c.t.Fatal(err)
	}
	return q
}

var enqueuedID = regexp.MustCompile(`(?m)^enqueued (\S+)$`)

func TestEnqueueStatsInspect(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		out := c.ok("enqueue", "--type", "email", "--level", "high", "--payload", `{"to":"ada@example.com"}`,
			"--id", "mail-1", "--max-retries", "3", "--timeout", "30s", "--not-preemptible")
		if !strings.Contains(out, "enqueued mail-1") || !strings.Contains(out, "level high (2), pending") {
			t.Fatalf("enqueue output %q", out)
		}
		c.ok("enqueue", "--type", "resize", "--level", "0")
		c.ok("enqueue", "--type", "resize", "--level", "low", "--delay", "1h")
		c.fail(1, "enqueue", "--type", "email", "--id", "mail-1")      // duplicate
		c.fail(2, "enqueue", "--type", "email", "--level", "urgent")   // no such level
		c.fail(2, "enqueue", "--type", "email", "--payload", `{"to":`) // bad JSON
		c.fail(2, "enqueue", "--type", "email", "--class", "paying")   // no classes
		c.fail(2, "enqueue", "--type", "email", "--class", "gold", "--classes", "free=low")
		c.fail(2, "enqueue", "--type", "email", "--max-retries", "-5")
		c.fail(2, "enqueue", "--type", "email", "--max-retries", "-1")
		c.fail(2, "enqueue", "--type", "email", "--delay", "-10s")
		c.fail(2, "enqueue", "--type", "email", "--timeout", "-1s")
		c.fail(2, "enqueue", "--type", "email", "--levels", "a,a,b")
		// --classes creates a queue; the classes are read from Redis then.
		out = c.ok("enqueue", "--queue", "paid", "--type", "email", "--class", "paying", "--classes", "free=low,paying=normal")
		if !strings.Contains(out, "level normal (1)") {
			t.Fatalf("class output %q", out)
		}
		if out = c.ok("enqueue", "--queue", "paid", "--type", "email", "--class", "free"); !strings.Contains(out, "level low (0)") {
			t.Fatalf("class read from Redis: %q", out)
		}
		if errOut := c.fail(2, "enqueue", "--type", "email", "--class", "free"); !strings.Contains(errOut, `queue "default" has no classes`) {
			t.Fatalf("class of another queue: %q", errOut)
		}
		c.ok("enqueue", "--type", "email", "--level", "normal")

		out = c.ok("stats")
		for _, want := range []string{
			`queue "default" (namespace "` + b.Prefix + `"): 0 live workers`,
			"LEVEL    NAME    STATE  DEPTH  IN FLIGHT  SCHEDULED  DEAD  CANCELED  OLDEST WAIT  RATE/s  FAILED/s  PREEMPTED/s  BREACHES/min",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("stats lacks %q:\n%s", want, out)
			}
		}
		rows := map[string]*regexp.Regexp{
			"high":   regexp.MustCompile(`(?m)^\s*2\s+high\s+running\s+1\s+0\s+0\s+0\s+0\s+\d+ms\s+0\s+0\s+0\s+0$`),
			"normal": regexp.MustCompile(`(?m)^\s*1\s+normal\s+running\s+1\s+0\s+0\s+0\s+0\s+\d+ms\s+0\s+0\s+0\s+0$`),
			"low":    regexp.MustCompile(`(?m)^\s*0\s+low\s+running\s+1\s+0\s+1\s+0\s+0\s+\d+ms\s+0\s+0\s+0\s+0$`),
			"total":  regexp.MustCompile(`(?m)^\s*total\s+3\s+0\s+1\s+0\s+0\s+0\s+0\s+0\s+0$`),
		}
		for name, re := range rows {
			if !re.MatchString(out) {
				t.Errorf("stats row %s does not match %s:\n%s", name, re, out)
			}
		}

		// A worker leases the high task and checkpoints binary state.
		q := c.client()
		ctx := context.Background()
		w1 := testworker.New(q, "w1")
		leased, err := w1.LeaseOne(ctx, 2)
		if err != nil || leased.ID != "mail-1" {
			t.Fatalf("lease: %v %v", leased, err)
		}
		if _, err := w1.SaveCheckpoint(ctx, leased, []byte{0, 1, 2, 0xff}); err != nil {
			t.Fatal(err)
		}
		out = c.ok("inspect", "mail-1")
		for _, want := range []string{
			"id           mail-1", "type         email", "level        high (2)", "state        active",
			"attempts     0 failed of at most 4 (the first run and 3 retries)", "preemptible  false", "timeout      30s",
			"worker       w1", "lease token  " + leased.Token,
			`payload      24 bytes: "{\"to\":\"ada@example.com\"}"`,
			"checkpoint   seq 1, 4 bytes, binary: 000102ff",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect lacks %q:\n%s", want, out)
			}
		}
		if !regexp.MustCompile(`enqueued at\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \S+ \(\d+ms ago\)`).MatchString(out) {
			t.Errorf("inspect time format:\n%s", out)
		}
		out = c.ok("stats")
		if !regexp.MustCompile(`(?m)^\s*2\s+high\s+running\s+0\s+1\s+0\s+0\s+0\s+-\s+0\s+0\s+0\s+0$`).MatchString(out) {
			t.Errorf("stats after lease:\n%s", out)
		}

		// A pending task shows its position; flags may follow the ID.
		id := enqueuedID.FindStringSubmatch(c.ok("enqueue", "--type", "resize", "--payload", "plain text"))[1]
		out = c.ok("inspect", id)
		if !strings.Contains(out, "state        pending (position 2 of 2 in low)") ||
			!strings.Contains(out, `payload      10 bytes: "plain text"`) ||
			!strings.Contains(out, "checkpoint   none") {
			t.Errorf("inspect pending:\n%s", out)
		}
		if !strings.Contains(out, "result       none") {
			t.Errorf("inspect without a result:\n%s", out)
		}

		// A result is shown with the task, and after the ack deleted it.
		if err := w1.SaveResult(ctx, leased, []byte(`{"sent":true}`)); err != nil {
			t.Fatal(err)
		}
		out = c.ok("inspect", "mail-1")
		if !strings.Contains(out, "state        active") || !strings.Contains(out, `result       13 bytes: "{\"sent\":true}"`) ||
			!regexp.MustCompile(`result at\s+\S+ \S+ \S+ \([\d.]+m?s ago\), kept until \S+ \S+ \S+ \(in (24h0m0s|23h59m\d+s)\)`).MatchString(out) {
			t.Errorf("inspect with a result:\n%s", out)
		}
		if err := w1.Ack(ctx, leased); err != nil {
			t.Fatal(err)
		}
		out = c.ok("inspect", "mail-1")
		for _, want := range []string{"type         email", "level        high (2)",
			"state        done (record deleted at completion; its result is retained)", `result       13 bytes: "{\"sent\":true}"`} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect of a completed task lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "payload") || strings.Contains(out, "attempts") {
			t.Errorf("inspect of a completed task shows fields it no longer has:\n%s", out)
		}

		errOut := c.fail(1, "inspect", "nope")
		if !strings.Contains(errOut, "task not found") {
			t.Errorf("inspect unknown: %q", errOut)
		}
		// A missing task names the queue searched: it may be on another.
		errOut = c.fail(1, "inspect", "nope", "--queue", "paid")
		if want := `task not found: "nope" in queue "paid" (namespace "` + b.Prefix + `")`; !strings.Contains(errOut, want) {
			t.Errorf("inspect unknown: %q lacks %q", errOut, want)
		}
	})
}

func TestDeadCommands(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		c := newCLI(t, b)
		q := c.client()
		if out := c.ok("dead", "list"); !strings.Contains(out, "no dead tasks") {
			t.Fatalf("empty list: %q", out)
		}
		ctx := context.Background()
		var ids []string
		for i, reason := range []string{"boom", "bad input\nline two"} {
			out := c.ok("enqueue", "--type", "job", "--level", "normal", "--payload", `{"i":1}`)
			ids = append(ids, enqueuedID.FindStringSubmatch(out)[1])
			w := testworker.New(q, "w")
			leased, err := w.LeaseOne(ctx, 0)
			if err != nil || leased.ID != ids[i] {
				t.Fatalf("lease: %v %v", leased, err)
			}
			if _, err := w.SaveCheckpoint(ctx, leased, []byte(`{"row":7}`)); err != nil {
				t.Fatal(err)
			}
			if err := w.DeadLetter(ctx, leased, reason); err != nil {
				t.Fatal(err)
			}
		}
		out := c.ok("dead", "list")
		for _, want := range []string{"ID", "REASON", ids[0], ids[1], "boom", "bad input line two", "showing 1-2 of 2 dead tasks",
			"requeue with: overtake dead requeue --queue default --namespace " + b.Prefix + " ID"} {
			if !strings.Contains(out, want) {
				t.Errorf("dead list lacks %q:\n%s", want, out)
			}
		}
		if out := c.ok("dead", "list", "--offset", "1", "--limit", "5"); strings.Contains(out, ids[0]) || !strings.Contains(out, ids[1]) {
			t.Errorf("paged list:\n%s", out)
		}

		out = c.ok("dead", "requeue", ids[0], "--reset-checkpoint")
		if strings.TrimSpace(out) != "requeued "+ids[0] {
			t.Errorf("requeue output %q", out)
		}
		tk, err := q.Inspect(ctx, ids[0])
		if err != nil || tk.State != queue.StatePending || tk.Checkpoint != nil || tk.Attempt != 0 {
			t.Errorf("requeued task: %+v %v", tk, err)
		}
		errOut := c.fail(1, "dead", "requeue", ids[0])
		if !strings.Contains(errOut, "not dead-lettered") {
			t.Errorf("second requeue: %q", errOut)
		}
		out = c.ok("dead", "delete", ids[1])
		if strings.TrimSpace(out) != "deleted "+ids[1] {
			t.Errorf("delete output %q", out)
		}
		if _, err := q.Inspect(ctx, ids[1]); err == nil {
			t.Error("deleted task still exists")
		}
		c.fail(1, "dead", "delete", ids[1])
		out = c.ok("stats")
		if !regexp.MustCompile(`(?m)^\s*1\s+normal\s+running\s+1\s+0\s+0\s+0\s+0\s+\S+\s+0\s+0\s+0\s+0$`).MatchString(out) {
			t.Errorf("stats after requeue and delete:\n%s", out)
		}
	})
}

func TestStatsCluster(t *testing.T) {
	cl := testredis.StartCluster(t)
	addrs := cl.Addrs()
	q, err := queue.New(cl.Client(), queue.Config{Namespace: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := q.Enqueue(ctx, queue.NewTask("x", nil), queue.Level(2)); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "stats", "--namespace", "cli", "--redis", "redis://"+strings.Join(addrs, ","))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`(?m)^\s*2\s+high\s+running\s+1\s+0\s+0\s+0\s+0\s+\S+\s+0\s+0\s+0\s+0$`).MatchString(out) {
		t.Errorf("cluster stats:\n%s", out)
	}

	// queues finds the queues on every master: one per node.
	nodes := map[string]bool{}
	cc := cl.Client().(*redis.ClusterClient)
	for i := 0; len(nodes) < 3 && i < 200; i++ {
		name := fmt.Sprint("q", i)
		node, err := cc.MasterForKey(ctx, "{cli:"+name+"}:shape")
		if err != nil {
			t.Fatal(err)
		}
		if !nodes[node.Options().Addr] {
			nodes[node.Options().Addr] = true
			if _, err := queue.New(cc, queue.Config{Namespace: "cli", Name: name, Levels: 2}); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, errOut, code = runCLI(t, "queues", "--namespace", "cli", "--redis", "redis://"+strings.Join(addrs, ","))
	if code != 0 || !strings.Contains(out, `namespace "cli": 4 queues`) ||
		!regexp.MustCompile(`(?m)^default\s+3\s+1\s+0\s+0\s+0\s+high=1 normal=0 low=0$`).MatchString(out) ||
		strings.Count(out, "1=0 0=0\n") != 3 {
		t.Errorf("cluster queues: exit %d %s\n%s", code, errOut, out)
	}

	// A queue of three shards (issue 31): the tools read its shape, so
	// stats sum the shards and a task is found in its own.
	sq, err := queue.New(cc, queue.Config{Namespace: "clish", Name: "sh", Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	var sids []string
	for range 6 {
		tk, err := sq.Enqueue(ctx, queue.NewTask("x", nil), queue.Level(2))
		if err != nil {
			t.Fatal(err)
		}
		sids = append(sids, tk.ID)
	}
	flags := []string{"--namespace", "clish", "--queue", "sh", "--redis", "redis://" + strings.Join(addrs, ",")}
	out, errOut, code = runCLI(t, append([]string{"stats"}, flags...)...)
	if code != 0 || !regexp.MustCompile(`(?m)^\s*2\s+high\s+running\s+6\s+0\s+0\s+0\s+0\s+\S+\s+0\s+0\s+0\s+0$`).MatchString(out) {
		t.Errorf("sharded stats: exit %d %s\n%s", code, errOut, out)
	}
	for _, id := range sids {
		out, errOut, code = runCLI(t, append([]string{"inspect"}, append(flags, id)...)...)
		if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "pending") {
			t.Errorf("sharded inspect %s: exit %d %s\n%s", id, code, errOut, out)
		}
	}
	out, errOut, code = runCLI(t, append([]string{"cancel"}, append(flags, sids[5])...)...)
	if tk, err := sq.Inspect(ctx, sids[5]); code != 0 || err != nil || tk.State != queue.StateCanceled {
		t.Errorf("sharded cancel: exit %d %s\n%s; inspect: %v %v", code, errOut, out, tk, err)
	}
}
