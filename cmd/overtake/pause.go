package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/overtake/overtake/queue"
)

// cmdPause stops the fleet from leasing at one level or the whole queue.
func cmdPause(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return pauseOrResume(ctx, "pause", args, stdout, stderr)
}

// cmdResume lets the fleet lease from one level or the whole queue again.
func cmdResume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return pauseOrResume(ctx, "resume", args, stdout, stderr)
}

func pauseOrResume(ctx context.Context, op string, args []string, stdout, stderr io.Writer) error {
	synopsis := "[--level L] [flags]"
	if op == "pause" {
		synopsis = "[--level L] [--preempt] [flags]"
	}
	fs := newFlagSet(op, synopsis, stderr)
	rf := addRedisFlags(fs)
	level := fs.String("level", "", "priority level, by name (\"high\") or number; default every level")
	preempt := false
	if op == "pause" {
		fs.BoolVar(&preempt, "preempt", false,
			"also preempt the level's running tasks (each saves its checkpoint and is requeued at the head of its level); default: they finish")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	if _, err := rf.config(); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return withQueue(ctx, rf, func(q *queue.Client) error {
		lvl := queue.AllLevels
		if set["level"] {
			if lvl, err = levelOf(q.Config(), *level); err != nil {
				return usageErr("--level: %v", err)
			}
		}
		before, err := q.Paused(ctx)
		if err != nil {
			return err
		}
		what := fmt.Sprintf("level %d (%s)", lvl, q.LevelName(lvl))
		if lvl == queue.AllLevels {
			what = fmt.Sprintf("all %d levels", q.Config().Levels)
		}
		if op == "resume" {
			if err := q.Resume(ctx, lvl); err != nil {
				return err
			}
			note := ""
			if _, was := before[lvl]; lvl != queue.AllLevels && !was {
				note = " (it was not paused)"
			}
			fmt.Fprintf(stdout, "%s resumed%s; workers lease from %s again within one wake-up\n", what, note, pronoun(lvl))
		} else {
			mode := queue.PauseWait
			if preempt {
				mode = queue.PausePreempt
			}
			if err := q.Pause(ctx, lvl, mode); err != nil {
				return err
			}
			effect := "running tasks finish"
			if preempt {
				effect = "running tasks are preempted, checkpointed and requeued"
			}
			fmt.Fprintf(stdout, "%s paused; %s; new tasks are still accepted\n", what, effect)
		}
		after, err := q.Paused(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, describePaused(q, after))
		return nil
	})
}

func pronoun(lvl int) string {
	if lvl == queue.AllLevels {
		return "them"
	}
	return "it"
}

// describePaused lists the paused levels, most urgent first:
// "paused: high (2, preempt), low (0)" or "no level is paused".
func describePaused(q *queue.Client, m map[int]queue.PauseMode) string {
	if len(m) == 0 {
		return "no level is paused"
	}
	ls := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(ls))
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		s := fmt.Sprintf("%s (%d", q.LevelName(l), l)
		if m[l] == queue.PausePreempt {
			s += ", preempt"
		}
		parts = append(parts, s+")")
	}
	return "paused: " + strings.Join(parts, ", ")
}
