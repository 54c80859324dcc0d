package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/overtake/overtake/queue"
)

// previewBytes is how much of a payload, checkpoint or result inspect
// shows.
const previewBytes = 240

// cmdInspect prints every field of one or more tasks.
func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect", "[flags] TASK_ID...", stderr)
	rf := addRedisFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("a task ID is required")
	}
	q, closeFn, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	var errs []error
	for i, id := range pos {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		t, err := q.InspectDetail(ctx, id) // with the lease: worker, token, deadline, run spans
		switch {
		case errors.Is(err, queue.ErrMalformedRecord) && t != nil:
			fmt.Fprintf(stdout, "WARNING: %v\n", err)
			errs = append(errs, err)
		case errors.Is(err, queue.ErrTaskNotFound):
			cfg := q.Config()
			errs = append(errs, fmt.Errorf("%w in queue %q (namespace %q)", err, cfg.Name, cfg.Namespace))
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		writeTask(ctx, stdout, q, t, q.Config().Clock())
	}
	return errors.Join(errs...)
}

// writeTask prints t, a task of q, field by field; now measures ages.
func writeTask(ctx context.Context, w io.Writer, q *queue.Client, t *queue.TaskDetail, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, a...)) }
	row("id", "%s", t.ID)
	row("type", "%s", t.Type)
	row("level", "%s (%d)", q.LevelName(t.Level), t.Level)
	if t.ResultOnly { // the task completed and its record is gone
		row("state", "%s (record deleted at completion; its result is retained)", t.State)
		row("enqueued at", "%s", stamp(t.EnqueuedAt, now))
		writeResult(row, t, now)
		_ = tw.Flush()
		return
	}
	if t.OriginalLevel != t.Level {
		row("enqueued at level", "%s (%d), aged up, last at %s", q.LevelName(t.OriginalLevel), t.OriginalLevel, stamp(t.AgedAt, now))
	}
	state := string(t.State)
	if t.State == queue.StatePending {
		if pos, n := position(ctx, q, t.Level, t.ID); pos > 0 {
			state += fmt.Sprintf(" (position %d of %d in %s)", pos, n, q.LevelName(t.Level))
		}
	}
	if t.State == queue.StateCanceled {
		state += " (by overtake cancel or Client.Cancel: it will not run again)"
	}
	row("state", "%s", state)
	if t.Class != "" {
		row("class", "%s", t.Class)
	}
	row("attempts", "%s", attemptsText(t.Attempt, t.MaxRetries))
	row("preemptible", "%t", !t.NotPreemptible)
	row("preemptions", "%d", t.Preemptions)
	row("recoveries", "%d", t.Recoveries)
	if t.Timeout > 0 {
		row("timeout", "%s", t.Timeout)
	} else {
		row("timeout", "none")
	}
	row("enqueued at", "%s", stamp(t.EnqueuedAt, now))
	row("ready at", "%s", stamp(t.ReadyAt, now))
	if !t.ProcessAt.IsZero() && t.ProcessAt.After(t.EnqueuedAt) {
		row("process at", "%s", stamp(t.ProcessAt, now))
	}
	if t.Worker != "" || t.Token != "" {
		row("worker", "%s", t.Worker)
		row("lease token", "%s", t.Token)
		row("lease until", "%s", stamp(t.LeaseDeadline, now))
	}
	if !t.CancelRequestedAt.IsZero() && t.State == queue.StateActive {
		row("cancel asked", "%s: it ends canceled when its handler returns, unless it succeeded first",
			stamp(t.CancelRequestedAt, now))
	}
	if t.LastError != "" {
		row("last error", "%s", t.LastError)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		row("header "+k, "%s", t.Headers[k])
	}
	for i, sp := range t.RunSpans {
		row(fmt.Sprintf("run span %d", i+1), "%s", sp)
	}
	row("payload", "%s", preview(t.Payload))
	if len(t.Checkpoint) > 0 || t.CheckpointSeq > 0 {
		row("checkpoint", "seq %d, %s", t.CheckpointSeq, preview(t.Checkpoint))
	} else {
		row("checkpoint", "none")
	}
	writeResult(row, t, now)
	_ = tw.Flush()
}

// writeResult prints the result rows of t: the result the handler stored
// (handlers.SetResult), when, and until when it is kept.
func writeResult(row func(k, format string, a ...any), t *queue.TaskDetail, now time.Time) {
	if t.ResultAt.IsZero() {
		row("result", "none")
		return
	}
	row("result", "%s", preview(t.Result))
	row("result at", "%s, kept until %s", stamp(t.ResultAt, now), stamp(t.ResultExpiresAt, now))
}

// positionPage is how many IDs position reads per round trip, the most
// PendingPage returns.
const positionPage = 1000

// position returns the place of task id in the pending list of level,
// from 1 at the head, and the list's length; 0 when it is not there (or
// the list cannot be read).
func position(ctx context.Context, q *queue.Client, level int, id string) (pos, n int64) {
	for off := int64(0); ; off += positionPage {
		ids, total, err := q.PendingPage(ctx, level, off, positionPage)
		if err != nil {
			return 0, 0
		}
		if i := slices.Index(ids, id); i >= 0 {
			return off + int64(i) + 1, total
		}
		if len(ids) < positionPage || off+positionPage >= total {
			return 0, total
		}
	}
}

// stamp formats a time with its distance from now.
func stamp(ts, now time.Time) string {
	if ts.IsZero() {
		return "-"
	}
	d := now.Sub(ts)
	rel := roundDuration(d).String() + " ago"
	if d < 0 {
		rel = "in " + roundDuration(-d).String()
	}
	return ts.Local().Format("2006-01-02 15:04:05.000 MST") + " (" + rel + ")"
}

// preview describes b: its size and, if it is text, the text quoted (cut
// to previewBytes); otherwise a hex dump of its start.
func preview(b []byte) string {
	if len(b) == 0 {
		return "0 bytes"
	}
	size := strconv.Itoa(len(b)) + " bytes"
	head, cut := b, false
	if len(head) > previewBytes {
		head, cut = head[:previewBytes], true
		for i := 1; i < utf8.UTFMax && !utf8.Valid(head); i++ { // do not split a rune
			head = head[:len(head)-1]
		}
	}
	if printable(head) {
		s := strconv.Quote(string(head))
		if cut {
			s += "…"
		}
		return size + ": " + s
	}
	n := min(len(b), 32)
	var sb strings.Builder
	for i, c := range b[:n] {
		if i > 0 && i%4 == 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%02x", c)
	}
	if n < len(b) {
		sb.WriteString(" …")
	}
	return size + ", binary: " + sb.String()
}

// printable reports whether b is UTF-8 text without control characters
// other than tab and newlines.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}
