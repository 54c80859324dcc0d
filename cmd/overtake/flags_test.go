package main

import (
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testworker"
	"github.com/overtake/overtake/queue"
)

// TestFlagsBeforeOrAfterSubcommand runs the commands on queue "media" with
// the queue flags before the command, between it and its subcommand, and
// after both; each must find the queue's dead task, and the requeue hint
// must name the queue and namespace.
func TestFlagsBeforeOrAfterSubcommand(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "media"})
		if err != nil {
			t.Fatal(err)
		}
		task, err := q.Enqueue(ctx, queue.NewTask("resize", nil), queue.Level(1))
		if err != nil {
			t.Fatal(err)
		}
		w := testworker.New(q, "w")
		leased, err := w.LeaseOne(ctx, 0)
		if err != nil {
			t.Fatalf("lease: %v", err)
		}
		if err := w.DeadLetter(ctx, leased, "corrupt image"); err != nil {
			t.Fatal(err)
		}
		conn := []string{"--redis", "redis://" + b.Addr, "--namespace", b.Prefix}
		hint := "requeue with: overtake dead requeue --queue media --namespace " + b.Prefix + " ID"
		for _, args := range [][]string{
			append([]string{"dead", "--queue", "media", "list"}, conn...),
			append([]string{"dead", "list", "--queue", "media"}, conn...),
			append([]string{"--queue", "media", "dead", "list"}, conn...),
			append(append([]string{"--queue=media"}, conn...), "dead", "--limit", "5", "ls"),
		} {
			out, errOut, code := runCLI(t, args...)
			if code != 0 || !strings.Contains(out, task.ID) || !strings.Contains(out, hint) {
				t.Errorf("%q: exit %d, stderr %q, stdout:\n%s", args, code, errOut, out)
			}
		}
		for _, args := range [][]string{
			append([]string{"--queue", "media", "inspect", task.ID}, conn...),
			append(append([]string{"--queue", "media"}, conn...), "stats"),
			append([]string{"--queue", "media", "dead", "requeue"}, append(conn, task.ID)...),
		} {
			if _, errOut, code := runCLI(t, args...); code != 0 {
				t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
			}
		}
		if tk, err := q.Inspect(ctx, task.ID); err != nil || tk.State != queue.StatePending {
			t.Errorf("after requeue: %+v %v", tk, err)
		}
	})
}

func TestFlagsBeforeCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--limit", "5", "dead", "list"}, "flag --limit before the command: only --namespace, --queue"},
		{[]string{"--queue"}, "flag --queue needs a value"},
		{[]string{"--queue", "media"}, "no command given"},
		{[]string{"dead", "--queue", "media"}, "a subcommand is required"},
		{[]string{"dead", "--bogus", "list"}, "flag --bogus before the command"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("queue", "", "")
	fs.Bool("json", false, "")
	name, rest, err := splitCommand(fs, []string{"--queue", "q", "-json", "--queue=r", "stats", "--x", "y"})
	if err != nil || name != "stats" || strings.Join(rest, " ") != "--queue q -json --queue=r --x y" {
		t.Fatalf("name %q rest %q err %v", name, rest, err)
	}
	name, rest, err = splitCommand(fs, []string{"-json", "--", "-odd", "a"})
	if err != nil || name != "-odd" || strings.Join(rest, " ") != "-json a" {
		t.Fatalf("after --: name %q rest %q err %v", name, rest, err)
	}
}
