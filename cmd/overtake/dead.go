package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/overtake/overtake/queue"
)

// deadSynopses are the usage lines of the dead-letter subcommands.
var deadSynopses = map[string]string{
	"list":    "[--limit N] [--offset N] [--json] [flags]",
	"requeue": "[--reset-checkpoint] [flags] ID...",
	"delete":  "[flags] ID...",
	"ls":      "[--limit N] [--offset N] [--json] [flags]",
	"rm":      "[flags] ID...",
}

// cmdDead dispatches the dead-letter subcommands. Flags may come before
// the subcommand as well as after it ("dead --queue media list").
func cmdDead(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const synopsis = "list [--limit N] [--offset N] [--json] | requeue [--reset-checkpoint] ID... | delete ID..."
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help", "help":
			fmt.Fprintf(stderr, "Usage: overtake dead %s\nRun 'overtake dead list -h' for the connection flags.\n", synopsis)
			return nil
		}
	}
	// Every subcommand's flags, to tell a flag's value from the subcommand.
	all := flag.NewFlagSet("overtake dead", flag.ContinueOnError)
	addRedisFlags(all)
	all.Int64("limit", 0, "")
	all.Int64("offset", 0, "")
	all.Bool("reset-checkpoint", false, "")
	all.Bool("json", false, "")
	sub, args, err := splitCommand(all, args)
	switch {
	case errors.Is(err, errNoCommand):
		fmt.Fprintf(stderr, "Usage: overtake dead %s\n", synopsis)
		return usageErr("a subcommand is required: list, requeue or delete")
	case err != nil:
		return usageErr("%v", err)
	}
	fs := newFlagSet("dead "+sub, deadSynopses[sub], stderr)
	rf := addRedisFlags(fs)
	switch sub {
	case "list", "ls":
		limit := fs.Int64("limit", 50, "how many dead tasks to show")
		offset := fs.Int64("offset", 0, "skip this many, oldest first")
		asJSON := fs.Bool("json", false, "print JSON for machines")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return usageErr("unexpected argument %q", pos[0])
		}
		if *limit < 1 || *offset < 0 {
			return usageErr("--limit must be positive and --offset not negative")
		}
		return withQueue(ctx, rf, func(q *queue.Client) error {
			if *asJSON {
				return deadListJSON(ctx, stdout, q, *offset, *limit)
			}
			return deadList(ctx, stdout, q, rf, *offset, *limit)
		})
	case "requeue", "delete", "rm":
		reset := false
		if sub == "requeue" {
			fs.BoolVar(&reset, "reset-checkpoint", false, "drop the saved checkpoint: the task starts over")
		}
		ids, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return usageErr("at least one task ID is required")
		}
		return withQueue(ctx, rf, func(q *queue.Client) error {
			var errs []error
			for _, id := range ids {
				var err error
				if sub == "requeue" {
					err = q.RequeueDead(ctx, id, queue.RequeueDeadOptions{ResetCheckpoint: reset})
				} else {
					err = q.DeleteDead(ctx, id)
				}
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if sub == "requeue" {
					fmt.Fprintf(stdout, "requeued %s\n", id)
				} else {
					fmt.Fprintf(stdout, "deleted %s\n", id)
				}
			}
			return errors.Join(errs...)
		})
	default:
		return usageErr("unknown subcommand %q (want list, requeue or delete)", sub)
	}
}

func withQueue(ctx context.Context, rf *redisFlags, fn func(q *queue.Client) error) error {
	q, closeFn, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	return fn(q)
}

// deadPage reads the queue's dead total and a page of its dead tasks,
// oldest first, for deadList and deadListJSON.
func deadPage(ctx context.Context, q *queue.Client, offset, limit int64) (int64, []*queue.TaskInfo, error) {
	st, err := q.Stats(ctx)
	if err != nil {
		return 0, nil, err
	}
	var total int64
	for _, l := range st.Levels {
		total += l.Dead
	}
	tasks, err := q.DeadTasks(ctx, offset, limit)
	return total, tasks, err
}

// deadList prints a page of dead-lettered tasks, oldest first, and how to
// requeue one with the queue flags of rf.
func deadList(ctx context.Context, w io.Writer, q *queue.Client, rf *redisFlags, offset, limit int64) error {
	total, tasks, err := deadPage(ctx, q, offset, limit)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		fmt.Fprintf(w, "no dead tasks (offset %d)\n", offset)
		return nil
	}
	now := q.Config().Clock()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tLEVEL\tATTEMPTS\tENQUEUED\tREASON")
	for _, t := range tasks {
		age := "-"
		if !t.EnqueuedAt.IsZero() {
			age = roundDuration(now.Sub(t.EnqueuedAt)).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", t.ID, t.Type, q.LevelName(t.Level), t.Attempt, age, oneLine(t.LastError, 80))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nshowing %d-%d of %d dead tasks; requeue with: overtake dead requeue%s ID\n",
		offset+1, offset+int64(len(tasks)), max(total, offset+int64(len(tasks))), rf.queueFlags())
	return nil
}

// queueFlags returns the flags that select rf's queue, for a command line
// to copy: always --queue, and --namespace when not the default (the
// levels are read from Redis).
func (rf *redisFlags) queueFlags() string {
	s := " --queue " + shellQuote(rf.queue)
	if def := (queue.Config{}).WithDefaults(); rf.namespace != def.Namespace {
		s += " --namespace " + shellQuote(rf.namespace)
	}
	return s
}

// shellQuote quotes s for a POSIX shell unless it needs no quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:=/@+-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
