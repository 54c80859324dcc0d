package main

import (
	"fmt"
	"strings"
	"time"
)

// figures are one round's measurements of one system.
type figures struct {
	mem, cmds, cpu, enq, drain, idle   float64
	urgent50, urgent99, wake50, wake99 float64
}

// row describes one line of the table: how to read it from figures, its
// unit, its target (Overtake's) and whether lower is better.
type row struct {
	name, unit, target string
	get                func(f figures, c16, c64 float64) float64
	ok                 func(v float64) bool
}

var rows = []row{
	{"Redis used_memory per pending task (100-byte payload)", "B", "≤ 350",
		func(f figures, _, _ float64) float64 { return f.mem }, func(v float64) bool { return v <= 350 }},
	{"Redis commands per processed no-op task (commands inside Lua included)", "cmds", "≤ 8",
		func(f figures, _, _ float64) float64 { return f.cmds }, func(v float64) bool { return v <= 8 }},
	{"Redis CPU per 10k no-op tasks, enqueue + process (used_cpu_sys + user)", "ms", "≤ 250",
		func(f figures, _, _ float64) float64 { return f.cpu }, func(v float64) bool { return v <= 250 }},
	{"single Enqueue, 16 goroutines, fraction of the 16-goroutine EVALSHA ceiling", "", "≥ 0.8",
		func(f figures, c16, _ float64) float64 { return f.enq / c16 }, func(v float64) bool { return v >= 0.8 }},
	{"drain no-op tasks, concurrency 64, fraction of the 64-goroutine EVALSHA ceiling", "", "≥ 0.6",
		func(f figures, _, c64 float64) float64 { return f.drain / c64 }, func(v float64) bool { return v >= 0.6 }},
	{"idle worker process, Redis commands per second (inside Lua included)", "cmds/s", "≤ 2",
		func(f figures, _, _ float64) float64 { return f.idle }, func(v float64) bool { return v <= 2 }},
	{"urgent task start under saturation (4 slots full of low tasks), p50", "ms", "",
		func(f figures, _, _ float64) float64 { return f.urgent50 }, nil},
	{"urgent task start under saturation, p99", "ms", "< 5",
		func(f figures, _, _ float64) float64 { return f.urgent99 }, func(v float64) bool { return v < 5 }},
	{"wake latency (idle worker, Enqueue returned → handler start), p50", "ms", "",
		func(f figures, _, _ float64) float64 { return f.wake50 }, nil},
	{"wake latency, p99", "ms", "< 5",
		func(f figures, _, _ float64) float64 { return f.wake99 }, func(v float64) bool { return v < 5 }},
	{"enqueue throughput, 16 goroutines", "tasks/s", "",
		func(f figures, _, _ float64) float64 { return f.enq }, nil},
	{"drain throughput, concurrency 64", "tasks/s", "",
		func(f figures, _, _ float64) float64 { return f.drain }, nil},
}

// results collects every round of every system.
type results struct {
	names          []string
	rounds         map[string][]figures
	ceil16, ceil64 []float64
	started        time.Time
}

func newResults(systems []system) *results {
	r := &results{rounds: map[string][]figures{}, started: time.Now()}
	for _, s := range systems {
		r.names = append(r.names, s.name())
	}
	return r
}

func (r *results) add(s system, f figures) { r.rounds[s.name()] = append(r.rounds[s.name()], f) }

// values returns row w's value for system name in every round.
func (r *results) values(name string, w row) []float64 {
	var out []float64
	for i, f := range r.rounds[name] {
		out = append(out, w.get(f, r.ceil16[i], r.ceil64[i]))
	}
	return out
}

func (r *results) table(o options, addr, version, command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Overtake vs asynq v0.26.0 on one redis-server %s (%s), %s; %d round(s), medians; %s.\n\n",
		version, addr, machine(), len(r.ceil16), r.started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "EVALSHA ceiling (`return 1` from go-redis): 16 goroutines %.0f/s, 64 goroutines %.0f/s (median).\n\n",
		median(r.ceil16), median(r.ceil64))
	fmt.Fprintf(&b, "| figure | asynq | Overtake | Overtake / asynq | target (Overtake) | met |\n|---|---:|---:|---:|---|---|\n")
	for _, w := range rows {
		a, ov := median(r.values("asynq", w)), median(r.values("Overtake", w))
		ratio := "—"
		if a != 0 {
			ratio = fmt.Sprintf("%.2f", ov/a)
		}
		met := ""
		if w.ok != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[w.ok(ov)]
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", w.name, num(a, w.unit), num(ov, w.unit), ratio, w.target, met)
	}
	fmt.Fprintf(&b, "\nEvery round (asynq / Overtake):\n\n")
	for _, w := range rows {
		fmt.Fprintf(&b, "- %s: %s / %s\n", w.name, list(r.values("asynq", w)), list(r.values("Overtake", w)))
	}
	fmt.Fprintf(&b, "\nSizes: %d pending tasks for memory, %d tasks for commands and CPU, %d drained, concurrency %d, "+
		"idle window %v, %d/%d urgent and %d/%d wake samples (asynq/Overtake), asynq low tasks of %v.\n\n"+
		"Command: `%s`\n", o.memTasks, o.workTasks, o.drainTasks, o.conc, o.idle, o.aqUrgent, o.urgentSamples,
		o.aqWake, o.wakeSamples, o.lowFor, command)
	return b.String()
}

func num(v float64, unit string) string {
	switch {
	case unit == "":
		return fmt.Sprintf("%.2f", v)
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

func list(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprintf("%.3g", v)
	}
	return strings.Join(s, ", ")
}
