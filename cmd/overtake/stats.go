package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/overtake/overtake/queue"
)

// cmdStats prints one table row per level, most urgent first.
func cmdStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stats", "[flags]", stderr)
	rf := addRedisFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	q, closeFn, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	writeStats(stdout, q, st, q.Config().Clock())
	return nil
}

// writeStats renders st as a table; now measures the oldest waits.
func writeStats(w io.Writer, q *queue.Client, st *queue.Stats, now time.Time) {
	cfg := q.Config()
	fmt.Fprintf(w, "queue %q (namespace %q): %d live worker%s\n\n", st.Queue, cfg.Namespace, st.Workers, plural(st.Workers))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "LEVEL\tNAME\tDEPTH\tIN FLIGHT\tSCHEDULED\tDEAD\tOLDEST WAIT\t")
	var tot queue.LevelStats
	for i := len(st.Levels) - 1; i >= 0; i-- {
		l := st.Levels[i]
		wait := "-"
		if !l.OldestReadyAt.IsZero() {
			wait = roundDuration(now.Sub(l.OldestReadyAt)).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%s\t\n", l.Level, l.Name, l.Pending, l.Active, l.Scheduled, l.Dead, wait)
		tot.Pending += l.Pending
		tot.Active += l.Active
		tot.Scheduled += l.Scheduled
		tot.Dead += l.Dead
	}
	fmt.Fprintf(tw, "\ttotal\t%d\t%d\t%d\t%d\t\t\n", tot.Pending, tot.Active, tot.Scheduled, tot.Dead)
	_ = tw.Flush()
}

// roundDuration keeps about three significant digits.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Second)
	}
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
