package main

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/overtake/overtake/queue"
)

// frameLines renders v as text lines: a title, one row per level (most
// urgent first) with a total, and one row per live worker. With cols > 0
// every line is cut to at most cols runes. It reads nothing but v.
func frameLines(v statsView, cols int) []string {
	var b bytes.Buffer
	st := v.Stats
	fmt.Fprintf(&b, "queue %q (namespace %q): %d live worker%s\n\n", st.Queue, v.Namespace, st.Workers, plural(st.Workers))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	sla := ""
	if v.SLA != nil {
		sla = "SLA\t"
	}
	fmt.Fprintf(tw, "LEVEL\tNAME\tSTATE\tDEPTH\tIN FLIGHT\tSCHEDULED\tDEAD\tCANCELED\tOLDEST WAIT\t%sRATE/s\tFAILED/s\tPREEMPTED/s\tBREACHES/min\t\n", sla)
	var tot queue.LevelStats
	for i := len(st.Levels) - 1; i >= 0; i-- {
		l := st.Levels[i]
		wait := "-"
		if !l.OldestReadyAt.IsZero() {
			wait = roundDuration(v.Now.Sub(l.OldestReadyAt)).String()
		}
		if v.SLA != nil {
			sla = "-\t"
			if d, ok := v.SLA[l.Level]; ok {
				sla = d.String() + "\t"
				if v.overSLA(l) {
					sla = "OVER " + sla
				}
			}
		}
		r := l.Rates
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s%s\t%s\t%s\t%s\t\n", l.Level, l.Name, l.Paused, l.Pending,
			l.Active, l.Scheduled, l.Dead, l.Canceled, wait, sla, rate(r.Processed), rate(r.Failed), rate(r.Preempted), rate(r.SLABreaches*60))
		tot.Pending += l.Pending
		tot.Active += l.Active
		tot.Scheduled += l.Scheduled
		tot.Dead += l.Dead
		tot.Canceled += l.Canceled
		tot.Rates.Processed += r.Processed
		tot.Rates.Failed += r.Failed
		tot.Rates.Preempted += r.Preempted
		tot.Rates.SLABreaches += r.SLABreaches
	}
	if v.SLA != nil {
		sla = "\t"
	}
	r := tot.Rates
	fmt.Fprintf(tw, "\ttotal\t\t%d\t%d\t%d\t%d\t%d\t\t%s%s\t%s\t%s\t%s\t\n", tot.Pending, tot.Active, tot.Scheduled, tot.Dead,
		tot.Canceled, sla, rate(r.Processed), rate(r.Failed), rate(r.Preempted), rate(r.SLABreaches*60))
	_ = tw.Flush()
	fmt.Fprintf(&b, "rates: per second (breaches per minute) over the last %v, as workers' heartbeats report them\n",
		queue.RateWindow)
	if len(st.PoolRates) > 0 {
		names := slices.Sorted(maps.Keys(st.PoolRates))
		parts := make([]string, len(names))
		for i, n := range names {
			r := st.PoolRates[n]
			parts[i] = fmt.Sprintf("%s %s/s (failed %s, preempted %s)", oneLine(n, 64), rate(r.Processed), rate(r.Failed),
				rate(r.Preempted))
		}
		fmt.Fprintf(&b, "pools: %s\n", strings.Join(parts, "; "))
	}
	if len(v.Workers) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKER\tSLOTS USED\tHEARTBEAT\tPOOLS")
		for _, w := range v.Workers {
			slots := fmt.Sprintf("%d/%d", w.Busy, w.Capacity)
			if w.Capacity == 0 {
				slots += " (stopping)"
			}
			hb := "-"
			if !w.LastHeartbeat.IsZero() {
				hb = roundDuration(v.Now.Sub(w.LastHeartbeat)).String() + " ago"
			}
			pools := "-"
			if len(w.Pools) > 0 {
				ps := make([]string, len(w.Pools))
				for i, p := range w.Pools {
					ps[i] = fmt.Sprintf("%s %d/%d", oneLine(p.Name, 64), p.Busy, p.Size)
				}
				pools = strings.Join(ps, ", ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", oneLine(w.ID, 64), slots, hb, pools)
		}
		_ = tw.Flush()
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if cols > 0 {
		for i, l := range lines {
			lines[i] = truncate(l, cols)
		}
	}
	return lines
}

// overSLA reports whether l's oldest pending task waited longer than the
// level's --sla.
func (v statsView) overSLA(l queue.LevelStats) bool {
	d, ok := v.SLA[l.Level]
	return ok && !l.OldestReadyAt.IsZero() && v.Now.Sub(l.OldestReadyAt) > d
}

// rate formats a rate with at most two decimals: "0", "<0.01", "0.05",
// "12.5", "1200".
func rate(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x < 0.005:
		return "<0.01"
	case x >= 100:
		return strconv.FormatFloat(math.Round(x), 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64)
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// statsJSON is the --json document.
type statsJSON struct {
	Queue             string       `json:"queue"`
	Namespace         string       `json:"namespace"`
	Time              time.Time    `json:"time"`
	RateWindowSeconds float64      `json:"rate_window_seconds"`
	LiveWorkers       int64        `json:"live_workers"`
	Levels            []levelJSON  `json:"levels"` // lowest level first
	Workers           []workerJSON `json:"workers"`
	// PoolRates are the fleet's rates by runtime pool, when workers have pools.
	PoolRates map[string]ratesJSON `json:"pool_rates,omitempty"`
}

type levelJSON struct {
	Level     int    `json:"level"`
	Name      string `json:"name"`
	State     string `json:"state"` // running, paused or paused (preempt)
	Paused    bool   `json:"paused"`
	PauseMode string `json:"pause_mode,omitempty"` // wait or preempt
	Pending   int64  `json:"pending"`
	InFlight  int64  `json:"in_flight"`
	Scheduled int64  `json:"scheduled"`
	Dead      int64  `json:"dead"`
	Canceled  int64  `json:"canceled"`
	// OldestReadyAt and OldestWaitSeconds are absent when nothing is pending.
	OldestReadyAt     *time.Time `json:"oldest_ready_at,omitempty"`
	OldestWaitSeconds *float64   `json:"oldest_wait_seconds,omitempty"`
	Rates             ratesJSON  `json:"rates"`
	// SLASeconds and SLAExceeded are present for levels given in --sla.
	SLASeconds  *float64 `json:"sla_seconds,omitempty"`
	SLAExceeded *bool    `json:"sla_exceeded,omitempty"`
}

type ratesJSON struct {
	ProcessedPerSecond   float64 `json:"processed_per_second"`
	FailedPerSecond      float64 `json:"failed_per_second"`
	PreemptedPerSecond   float64 `json:"preempted_per_second"`
	SLABreachesPerSecond float64 `json:"sla_breaches_per_second"`
}

type workerJSON struct {
	ID                  string     `json:"id"`
	Capacity            int        `json:"capacity"`
	Busy                int        `json:"busy"`
	LastHeartbeat       time.Time  `json:"last_heartbeat"`
	HeartbeatAgeSeconds float64    `json:"heartbeat_age_seconds"`
	AliveUntil          time.Time  `json:"alive_until"`
	Pools               []poolJSON `json:"pools,omitempty"`
}

type poolJSON struct {
	Name   string `json:"name"`
	Levels []int  `json:"levels"`
	Size   int    `json:"size"`
	Busy   int    `json:"busy"`
	Borrow bool   `json:"borrow"`
}

func poolsJSON(ps []queue.WorkerPool) []poolJSON {
	var out []poolJSON
	for _, p := range ps {
		out = append(out, poolJSON{Name: p.Name, Levels: p.Levels, Size: p.Size, Busy: p.Busy, Borrow: p.Borrow})
	}
	return out
}

func (v statsView) toJSON() statsJSON {
	out := statsJSON{Queue: v.Stats.Queue, Namespace: v.Namespace, Time: v.Now.UTC(),
		RateWindowSeconds: queue.RateWindow.Seconds(), LiveWorkers: v.Stats.Workers,
		Levels: []levelJSON{}, Workers: []workerJSON{}}
	for n, r := range v.Stats.PoolRates {
		if out.PoolRates == nil {
			out.PoolRates = map[string]ratesJSON{}
		}
		out.PoolRates[n] = ratesJSON{r.Processed, r.Failed, r.Preempted, r.SLABreaches}
	}
	for _, l := range v.Stats.Levels {
		j := levelJSON{Level: l.Level, Name: l.Name, State: l.Paused.String(), Paused: l.Paused != queue.NotPaused,
			Pending: l.Pending, InFlight: l.Active, Scheduled: l.Scheduled, Dead: l.Dead, Canceled: l.Canceled,
			Rates: ratesJSON{l.Rates.Processed, l.Rates.Failed, l.Rates.Preempted, l.Rates.SLABreaches}}
		switch l.Paused {
		case queue.PauseWait:
			j.PauseMode = "wait"
		case queue.PausePreempt:
			j.PauseMode = "preempt"
		}
		if !l.OldestReadyAt.IsZero() {
			at, wait := l.OldestReadyAt.UTC(), max(v.Now.Sub(l.OldestReadyAt), 0).Seconds()
			j.OldestReadyAt, j.OldestWaitSeconds = &at, &wait
		}
		if d, ok := v.SLA[l.Level]; ok {
			s, over := d.Seconds(), v.overSLA(l)
			j.SLASeconds, j.SLAExceeded = &s, &over
		}
		out.Levels = append(out.Levels, j)
	}
	for _, w := range v.Workers {
		out.Workers = append(out.Workers, workerJSON{ID: w.ID, Capacity: w.Capacity, Busy: w.Busy,
			LastHeartbeat: w.LastHeartbeat.UTC(), HeartbeatAgeSeconds: max(v.Now.Sub(w.LastHeartbeat), 0).Seconds(),
			AliveUntil: w.AliveUntil.UTC(), Pools: poolsJSON(w.Pools)})
	}
	return out
}
