package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"time"

	"github.com/overtake/overtake/queue"
)

// minWatchInterval bounds how often --watch reads Redis.
const minWatchInterval = 10 * time.Millisecond

// cmdStats prints one table row per level, most urgent first, and one per
// live worker; --json prints the same as one JSON document, --watch
// refreshes it every --interval.
func cmdStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stats", "[--watch [--interval 1s] | --once] [--json] [--sla level=duration,...] [flags]", stderr)
	rf := addRedisFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for machines: one document, or with --watch one object per line per interval")
	watchF := fs.Bool("watch", false, "refresh every --interval until Ctrl-C; redrawn in place on a terminal, "+
		"else one plain frame per interval separated by a blank line")
	once := fs.Bool("once", false, "print one plain frame and exit (what stats does without --watch)")
	interval := fs.Duration("interval", time.Second, "refresh interval of --watch")
	slaF := fs.String("sla", "", "SLAs to check the oldest waits against, as level=duration pairs (\"high=10s,normal=1m\"); "+
		"the workers' runtime.Config.SLA is not stored in Redis")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["interval"] && !*watchF:
		return usageErr("--interval needs --watch")
	case *interval < minWatchInterval:
		return usageErr("--interval %v: must be at least %v", *interval, minWatchInterval)
	}
	// The levels of --sla are the queue's: its syntax is checked first,
	// its level names once the shape is read.
	if _, err := parseSLA(queue.Config{}, *slaF, false); err != nil {
		return err
	}
	q, closeFn, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	sla, err := parseSLA(q.Config(), *slaF, true)
	if err != nil {
		return err
	}
	if *watchF && !*once {
		return watch(ctx, q, stdout, watchOptions{interval: *interval, json: *asJSON, sla: sla})
	}
	v, err := snapshot(ctx, q, sla)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v.toJSON())
	}
	_, err = io.WriteString(stdout, strings.Join(frameLines(v, 0), "\n")+"\n")
	return err
}

// parseSLA parses --sla: level=duration pairs, levels by name or number
// of cfg, or, without levels, any name (each pair then at its index).
func parseSLA(cfg queue.Config, s string, levels bool) (map[int]time.Duration, error) {
	if s == "" {
		return nil, nil
	}
	out := map[int]time.Duration{}
	for _, pair := range strings.Split(s, ",") {
		name, ds, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" || ds == "" {
			return nil, usageErr("--sla: %q is not level=duration", pair)
		}
		l := len(out)
		if levels {
			var err error
			if l, err = levelOf(cfg, name); err != nil {
				return nil, usageErr("--sla: %v", err)
			}
		}
		d, err := time.ParseDuration(ds)
		if err != nil || d <= 0 {
			return nil, usageErr("--sla %s: %q is not a positive duration (e.g. 10s)", name, ds)
		}
		if _, dup := out[l]; dup {
			return nil, usageErr("--sla: level %d given twice", l)
		}
		out[l] = d
	}
	return out, nil
}

// statsView is everything a frame shows, read at Now.
type statsView struct {
	Namespace string
	Now       time.Time
	Stats     *queue.Stats
	Workers   []queue.WorkerInfo
	SLA       map[int]time.Duration // from --sla; nil: no SLA column
}

// snapshot reads the stats and the live workers (two round trips).
func snapshot(ctx context.Context, q *queue.Client, sla map[int]time.Duration) (statsView, error) {
	st, err := q.Stats(ctx)
	if err != nil {
		return statsView{}, err
	}
	ws, err := q.Workers(ctx)
	if err != nil {
		return statsView{}, err
	}
	return statsView{Namespace: q.Config().Namespace, Now: q.Config().Clock(), Stats: st, Workers: ws, SLA: sla}, nil
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

func plural[N int | int64](n N) string {
	if n == 1 {
		return ""
	}
	return "s"
}
