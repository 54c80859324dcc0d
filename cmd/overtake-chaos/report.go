package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// report is what the run found.
type report struct {
	logs                          string
	faults                        []string
	enqueued, done, dead, pending int64
	dups, breaches, events        map[string]string
	base, chaosLat                []float64 // urgent start latency, ms
	took                          time.Duration
	details, saves                []string
	failover                      *foReport // nil when the scenario did not run
}

func (r *report) collect(ctx context.Context, p *producer, took time.Duration) {
	r.took = took
	r.enqueued = int64(p.enqueued)
	r.done, _ = p.rdb.SCard(ctx, kDone).Result()
	r.dead = p.dead(ctx)
	if st, err := p.q.Stats(ctx); err == nil {
		for _, l := range st.Levels {
			r.pending += l.Pending + l.Active + l.Scheduled
		}
	}
	r.dups, _ = p.rdb.HGetAll(ctx, kDups).Result()
	r.breaches, _ = p.rdb.HGetAll(ctx, kBreach).Result()
	r.events, _ = p.rdb.HGetAll(ctx, kStats).Result()
	r.details, _ = p.rdb.LRange(ctx, "chaos:breach:detail", 0, 20).Result()
	for _, d := range r.details {
		id := strings.SplitN(d, ":", 2)[0]
		saves, _ := p.rdb.LRange(ctx, "chaos:saves:"+id, 0, -1).Result()
		r.saves = append(r.saves, id+": "+strings.Join(saves, " "))
	}
	r.base = latencies(ctx, p, "base")
	r.chaosLat = latencies(ctx, p, "chaos")
}

func latencies(ctx context.Context, p *producer, phase string) []float64 {
	return latencyList(ctx, p.rdb, kLat+phase)
}

// latencyList reads a list of latencies in µs as ms, sorted.
func latencyList(ctx context.Context, rdb *redis.Client, key string) []float64 {
	raw, _ := rdb.LRange(ctx, key, 0, -1).Result()
	out := make([]float64, 0, len(raw))
	for _, s := range raw {
		var us float64
		if _, err := fmt.Sscan(s, &us); err == nil {
			out = append(out, us/1000)
		}
	}
	sort.Float64s(out)
	return out
}

func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[int(float64(len(xs)-1)*p/100)]
}

// breached reports whether any invariant failed.
func (r *report) breached() bool {
	return len(r.breaches) > 0 || r.done != r.enqueued || r.dead > 0 || r.pending > 0 ||
		(r.failover != nil && r.failover.breached())
}

func (r *report) table(o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| check | result | breach? |\n|---|---|---|\n")
	row := func(name, val string, bad bool) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, val, map[bool]string{true: "**BREACH**", false: "ok"}[bad])
	}
	row("tasks enqueued (baseline + chaos)", fmt.Sprint(r.enqueued), false)
	row("tasks done exactly once or more (ledger)", fmt.Sprint(r.done), r.done != r.enqueued)
	row("tasks lost (neither done nor dead)", fmt.Sprint(r.enqueued-r.done-r.dead), r.enqueued-r.done-r.dead != 0)
	row("tasks dead-lettered", fmt.Sprint(r.dead), r.dead > 0)
	row("tasks left pending, active or scheduled", fmt.Sprint(r.pending), r.pending > 0)
	row("two runs of a task at once (not fenced off)", orZero(r.breaches["two runs at once"]), r.breaches["two runs at once"] != "")
	row("checkpoint progress went backwards", orZero(r.breaches["checkpoint went backwards"]), r.breaches["checkpoint went backwards"] != "")
	for _, k := range sortedKeys(r.dups) {
		row("duplicate success: "+k, r.dups[k], false)
	}
	for _, k := range sortedKeys(r.events) {
		row(k, r.events[k], false)
	}
	fmt.Fprintf(&b, "\n| urgent task start latency | n | p50 | p99 |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| without chaos | %d | %.1f ms | %.1f ms |\n", len(r.base), pct(r.base, 50), pct(r.base, 99))
	fmt.Fprintf(&b, "| during chaos | %d | %.1f ms | %.1f ms |\n", len(r.chaosLat), pct(r.chaosLat, 50), pct(r.chaosLat, 99))
	for _, d := range r.details {
		fmt.Fprintf(&b, "\nbreach: %s\n", d)
	}
	for _, d := range r.saves {
		fmt.Fprintf(&b, "saves: %s\n", d)
	}
	fmt.Fprintf(&b, "\nFaults:\n\n")
	for i, f := range r.faults {
		if n := len(r.faults); n > 40 && i >= 20 && i < n-10 { // a soak: the first 20 and the last 10
			if i == 20 {
				fmt.Fprintf(&b, "    ... %d more ...\n", n-30)
			}
			continue
		}
		fmt.Fprintf(&b, "    %s\n", f)
	}
	fmt.Fprintf(&b, "\n%d tasks at %.0f/s, %d workers, took %v; worker logs in %s.\n", o.tasks, o.rate, o.workers,
		r.took.Round(time.Second), r.logs)
	if r.failover != nil {
		b.WriteString(r.failover.table(o))
	}
	return b.String()
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
