package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// wait waits until the failover scenario's queue holds nothing pending,
// active or scheduled (every task done, dead, or lost), for up to two
// minutes.
func (r *foReport) wait(ctx context.Context, p *producer) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		left, err := p.inQueue(ctx)
		if err == nil && left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("failover: %d tasks still in the queue after 2 min (%v)", left, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("failover: waiting for the queue to empty: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond): // polling the queue's counters
		}
	}
}

// inQueue returns the tasks pending, active or scheduled.
func (p *producer) inQueue(ctx context.Context) (int64, error) {
	st, err := p.q.Stats(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, l := range st.Levels {
		n += l.Pending + l.Active + l.Scheduled
	}
	return n, nil
}

// notDone returns the enqueued tasks that are not in the ledger's done set.
func (p *producer) notDone(ctx context.Context) ([]string, error) {
	var out []string
	for i := 0; i < len(p.ids); i += 1000 {
		batch := p.ids[i:min(i+1000, len(p.ids))]
		members := make([]any, len(batch))
		for j, id := range batch {
			members[j] = id
		}
		in, err := p.rdb.SMIsMember(ctx, kDone, members...).Result()
		if err != nil {
			return nil, err
		}
		for j, ok := range in {
			if !ok {
				out = append(out, batch[j])
			}
		}
	}
	return out, nil
}

func (r *foReport) collect(ctx context.Context, p *producer, took time.Duration) {
	r.took, r.enqueued, r.unconfirmed = took, p.enqueued, len(p.unconfirmed)
	missing, err := p.notDone(ctx)
	if err != nil {
		r.faults = append(r.faults, "reading the ledger FAILED: "+err.Error())
	}
	for _, id := range missing {
		if p.unconfirmed[id] {
			r.lostUnconfirmed = append(r.lostUnconfirmed, id)
		} else {
			r.lostConfirmed = append(r.lostConfirmed, id)
		}
	}
	r.done, _ = p.rdb.SCard(ctx, kDone).Result()
	r.dead = p.dead(ctx)
	r.pending, _ = p.inQueue(ctx)
	r.dups, _ = p.rdb.HGetAll(ctx, kDups).Result()
	r.breaches, _ = p.rdb.HGetAll(ctx, kBreach).Result()
	r.details, _ = p.rdb.LRange(ctx, "chaos:breach:detail", 0, 20).Result()
	r.urgent = latencies(ctx, p, "failover")
	for _, k := range r.kills {
		first, err := p.rdb.ZRangeByScoreWithScores(ctx, kStarts, &redis.ZRangeBy{
			Min: "(" + strconv.FormatInt(k.UnixMilli(), 10), Max: "+inf", Count: 1}).Result()
		if err == nil && len(first) == 1 {
			r.firstStarts = append(r.firstStarts, time.UnixMilli(int64(first[0].Score)).Sub(k))
		}
	}
}

// table is the failover scenario's part of the summary.
func (r *foReport) table(o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nFailover (primary with AOF everysec, 1 replica, 3 sentinels, %d workers on failover clients):\n", r.workers)
	fmt.Fprintf(&b, "\n| check | result | breach? |\n|---|---|---|\n")
	row := func(name, val string, bad bool) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, val, map[bool]string{true: "**BREACH**", false: "ok"}[bad])
	}
	row("tasks enqueued (acknowledged)", fmt.Sprint(r.enqueued), false)
	row("of which the replica did not confirm (ErrNotReplicated, or a retry found it)", fmt.Sprint(r.unconfirmed), false)
	row("confirmed tasks not done (lost or dead)", fmt.Sprint(len(r.lostConfirmed)), len(r.lostConfirmed) > 0)
	row("unconfirmed tasks lost (asynchronous replication)", fmt.Sprint(len(r.lostUnconfirmed)), false)
	row("tasks done exactly once or more (ledger)", fmt.Sprint(r.done), false)
	row("tasks dead-lettered", fmt.Sprint(r.dead), r.dead > 0)
	row("tasks left pending, active or scheduled", fmt.Sprint(r.pending), r.pending > 0)
	row("two runs of a task at once (not fenced off)", orZero(r.breaches["two runs at once"]), r.breaches["two runs at once"] != "")
	row("checkpoint progress went backwards", orZero(r.breaches["checkpoint went backwards"]), r.breaches["checkpoint went backwards"] != "")
	for _, k := range sortedKeys(r.dups) {
		row("duplicate success: "+k, r.dups[k], false)
	}
	row("times the primary was killed (SIGKILL)", fmt.Sprint(len(r.kills)), false)
	row("promotion after the kill", spread(r.promotions), false)
	row("first task start after the kill", spread(r.firstStarts), false)
	fmt.Fprintf(&b, "\n| urgent task start latency | n | p50 | p99 | max |\n|---|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| failover scenario | %d | %.1f ms | %.1f ms | %.1f ms |\n", len(r.urgent),
		pct(r.urgent, 50), pct(r.urgent, 99), pct(r.urgent, 100))
	for _, d := range r.details {
		fmt.Fprintf(&b, "breach: %s\n", d)
	}
	for i, id := range r.lostConfirmed {
		if i == 10 {
			fmt.Fprintf(&b, "... and %d more\n", len(r.lostConfirmed)-10)
			break
		}
		fmt.Fprintf(&b, "lost: %s\n", id)
	}
	fmt.Fprintf(&b, "\nFailover faults:\n\n")
	for _, f := range r.faults {
		fmt.Fprintf(&b, "    %s\n", f)
	}
	fmt.Fprintf(&b, "\n%d tasks at %.0f/s, took %v.\n", o.foTasks, o.rate, r.took.Round(time.Second))
	if r.failback != nil {
		b.WriteString(r.failback.table())
	}
	return b.String()
}

// spread is "min–max (n)" of ds in seconds, or "-" when empty.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 1 {
		return fmt.Sprintf("%.2f s", s[0].Seconds())
	}
	return fmt.Sprintf("%.2f–%.2f s (median %.2f s, n %d)", s[0].Seconds(), s[len(s)-1].Seconds(),
		s[len(s)/2].Seconds(), len(s))
}
