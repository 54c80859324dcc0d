package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"
)

// row is one line of the table: how to read it from a round's figures,
// its unit, and Overtake's target, if it has one.
type row struct {
	name, unit string
	get        func(f figures) float64
	target     target
}

// target is a bound on Overtake's figure: "≤", "≥" or "<" value.
type target struct {
	op    string
	value float64
}

func (t target) String() string {
	if t.op == "" {
		return ""
	}
	return fmt.Sprintf("%s %g", t.op, t.value)
}

// met reports whether v meets t.
func (t target) met(v float64) bool {
	switch t.op {
	case "≤":
		return v <= t.value
	case "≥":
		return v >= t.value
	case "<":
		return v < t.value
	}
	return true
}

var rows = []row{
	{"Redis used_memory per pending task (100-byte payload; client buffers excluded)", "B",
		func(f figures) float64 { return f.mem }, target{"≤", 350}},
	{"Redis commands per processed no-op task (commands inside Lua included)", "cmds",
		func(f figures) float64 { return f.cmds }, target{"≤", 8}},
	{"Redis CPU per 10k no-op tasks, enqueue + process (used_cpu_sys + user)", "ms",
		func(f figures) float64 { return f.cpu }, target{"≤", 250}},
	{"single Enqueue, 16 goroutines, fraction of the EVALSHA ceiling with 16 goroutines", "",
		func(f figures) float64 { return f.enq / f.c16 }, target{"≥", 0.8}},
	{"drain no-op tasks, concurrency 64, fraction of the EVALSHA ceiling with 64 goroutines", "",
		func(f figures) float64 { return f.drain / f.c64 }, target{"≥", 0.6}},
	{"idle worker process, Redis commands per second (inside Lua included)", "cmds/s",
		func(f figures) float64 { return f.idle }, target{"≤", 2}},
	{"urgent task start under saturation (4 slots full of low tasks), p50", "ms",
		func(f figures) float64 { return f.urgent50 }, target{}},
	{"urgent task start under saturation, p99", "ms",
		func(f figures) float64 { return f.urgent99 }, target{"<", 5}},
	{"wake latency (idle worker, Enqueue returned → handler start), p50", "ms",
		func(f figures) float64 { return f.wake50 }, target{}},
	{"wake latency, p99", "ms",
		func(f figures) float64 { return f.wake99 }, target{"<", 5}},
	{"single Enqueue throughput, 16 goroutines", "tasks/s",
		func(f figures) float64 { return f.enq }, target{}},
	{"drain throughput, concurrency 64", "tasks/s",
		func(f figures) float64 { return f.drain }, target{}},
	{"EVALSHA ceiling, 16 goroutines, around the enqueue run", "calls/s",
		func(f figures) float64 { return f.c16 }, target{}},
	{"EVALSHA ceiling, 64 goroutines, around the drain run", "calls/s",
		func(f figures) float64 { return f.c64 }, target{}},
	{"single Enqueue run: Redis CPU per 10k tasks (used_cpu_sys + user)", "ms",
		func(f figures) float64 { return f.enqRedis }, target{}},
	{"single Enqueue run: producer process CPU per 10k tasks", "ms",
		func(f figures) float64 { return f.enqClient }, target{}},
	{"single Enqueue run: Redis + producer CPU per 10k tasks", "ms",
		func(f figures) float64 { return f.enqRedis + f.enqClient }, target{}},
	{"drain run: Redis CPU per 10k tasks (used_cpu_sys + user)", "ms",
		func(f figures) float64 { return f.drainRedis }, target{}},
	{"drain run: worker process CPU per 10k tasks (its start and stop included)", "ms",
		func(f figures) float64 { return f.drainClient }, target{}},
	{"drain run: Redis + worker CPU per 10k tasks", "ms",
		func(f figures) float64 { return f.drainRedis + f.drainClient }, target{}},
	{"batch enqueue (EnqueueBatch / addBulk of 100 tasks), 16 callers", "tasks/s",
		func(f figures) float64 { return f.batch }, target{}},
	{"batch enqueue run: Redis CPU per 10k tasks", "ms",
		func(f figures) float64 { return f.batchRedis }, target{}},
	{"batch enqueue run: producer process CPU per 10k tasks", "ms",
		func(f figures) float64 { return f.batchClient }, target{}},
	{"batch enqueue run: Redis + producer CPU per 10k tasks", "ms",
		func(f figures) float64 { return f.batchRedis + f.batchClient }, target{}},
	{"a bare PING after the wake's idle gaps (this machine's floor for a wake), p50", "ms",
		func(f figures) float64 { return f.ping50 }, target{}},
	{"a bare PING after the wake's idle gaps, p99", "ms",
		func(f figures) float64 { return f.ping99 }, target{}},
}

// results collects every round of every system.
type results struct {
	names   []string
	rounds  map[string][]figures
	started time.Time
}

func newResults(systems []workloads) *results {
	r := &results{rounds: map[string][]figures{}, started: time.Now()}
	for _, s := range systems {
		r.names = append(r.names, s.name())
	}
	return r
}

func (r *results) add(s workloads, f figures) { r.rounds[s.name()] = append(r.rounds[s.name()], f) }

// values returns row w's value for system name in every round.
func (r *results) values(name string, w row) []float64 {
	var out []float64
	for _, f := range r.rounds[name] {
		out = append(out, w.get(f))
	}
	return out
}

// runEnv is where and how the run happened.
type runEnv struct {
	addr, redis, machine, command, asynq, overtake string
	bullmq                                         string    // "version (node version)"
	skipped                                        string    // why BullMQ was not measured, if it was not
	load                                           [2]string // /proc/loadavg at the start and the end
}

// loadAvg is the first three fields of /proc/loadavg, or "?".
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// treeVersion describes the Overtake tree the run was built from: its
// commit, and "-dirty" with uncommitted changes.
func treeVersion() string {
	out, err := exec.Command("git", "-C", "../..", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "(tree of unknown commit)"
	}
	return strings.TrimSpace(string(out))
}

// table renders the medians, every round and the run's sizes as markdown:
// a column per system measured, and Overtake's ratio to each peer.
func (r *results) table(o options, env runEnv) string {
	var b strings.Builder
	bullmq := "BullMQ " + env.bullmq + ", "
	if env.skipped != "" {
		bullmq = ""
	}
	fmt.Fprintf(&b, "# Overtake vs asynq and BullMQ\n\nasynq %s, %sOvertake %s on one redis-server %s (%s), %s; "+
		"%d round(s), medians; %s. Load average (1, 5, 15 min) at the start %s, at the end %s.\n\n",
		env.asynq, bullmq, env.overtake, env.redis, env.addr, env.machine, len(r.rounds[r.names[0]]),
		r.started.UTC().Format("2006-01-02 15:04 MST"), env.load[0], env.load[1])
	if env.skipped != "" {
		fmt.Fprintf(&b, "BullMQ was not measured: %s.\n\n", env.skipped)
	}
	b.WriteString("The EVALSHA ceiling is `return 1` from go-redis, each goroutine with a connection of its own, " +
		"measured right before and right after each throughput run (the mean of the two is that run's yardstick), " +
		"so that a fraction compares figures taken under the same load. " +
		"BullMQ runs each workload natively in a node process of its own (`bullmq/run.mjs`: handlers in JS, " +
		"its 16 or 64 goroutines are as many async callers or its worker's concurrency; every job has " +
		"removeOnComplete; priorities urgent 1, normal 2, low 3). A process's CPU is user + system: " +
		"`process.cpuUsage()` of the node process over the run for BullMQ, getrusage of the bench's Go process " +
		"around the run for asynq and Overtake (its few own goroutines included). asynq has no batch enqueue " +
		"(its Client exposes no pipeline either): its batch cells are n/a, its nearest equivalent is single Enqueue.\n\n")
	var peers []string
	head := "| figure |"
	for _, n := range r.names {
		head += " " + n + " |"
		if n != "Overtake" {
			peers = append(peers, n)
		}
	}
	for _, p := range peers {
		head += " Overtake / " + p + " |"
	}
	head += " target (Overtake) | met |\n|---|" + strings.Repeat("---:|", len(r.names)+len(peers)) + "---|---|\n"
	b.WriteString(head)
	for _, w := range rows {
		ov := median(r.values("Overtake", w))
		line := "| " + w.name + " |"
		for _, n := range r.names {
			line += " " + num(median(r.values(n, w)), w.unit) + " |"
		}
		for _, p := range peers {
			rt := ratio(ov, median(r.values(p, w)))
			if w.unit == "calls/s" { // a yardstick, not a figure of either system
				rt = "—"
			}
			line += " " + rt + " |"
		}
		met := ""
		if w.target.op != "" {
			met = map[bool]string{true: "yes", false: "**no**"}[w.target.met(ov)]
		}
		fmt.Fprintf(&b, "%s %s | %s |\n", line, w.target, met)
	}
	fmt.Fprintf(&b, "\nEvery round, %s:\n\n", strings.Join(r.names, " / "))
	for _, w := range rows {
		lists := make([]string, len(r.names))
		for i, n := range r.names {
			lists[i] = list(r.values(n, w))
		}
		fmt.Fprintf(&b, "- %s: %s\n", w.name, strings.Join(lists, " / "))
	}
	var capped []string
	for _, n := range r.names {
		for i, f := range r.rounds[n] {
			if f.capped > 0 {
				capped = append(capped, fmt.Sprintf("%s round %d: %d", n, i+1, f.capped))
			}
		}
	}
	if len(capped) > 0 {
		fmt.Fprintf(&b, "- latency samples that hit the %v cap (counted as %v): %s\n", o.waitCap, o.waitCap,
			strings.Join(capped, "; "))
	}
	fmt.Fprintf(&b, "\nSizes: %d pending tasks for memory, %d tasks for commands and CPU (enqueued one call each "+
		"from 16 goroutines while the worker runs), %d for enqueue throughput and for the batch enqueue (%d a call), "+
		"%d drained, concurrency %d; idle window %v; urgent: %d asynq and BullMQ / %d Overtake samples a round, "+
		"asynq's and BullMQ's low tasks of %v, the urgent one enqueued at a random moment of their run; wake: %d "+
		"asynq and BullMQ / %d Overtake samples a round, 0–%v apart; waits capped at %v.\n\nCommand: %s\n",
		o.memTasks, o.workTasks, o.enqTasks, batchSize, o.drainTasks, o.conc, o.idle, o.aqUrgent, o.urgentSamples,
		o.lowFor, o.aqWake, o.wakeSamples, o.gap, o.waitCap, env.command)
	return b.String()
}

// num formats a median with its unit: whole numbers from 100 up, three
// significant digits below, "n/a" for NaN (not measured).
func num(v float64, unit string) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	s := fmt.Sprintf("%.3g", v)
	if math.Abs(v) >= 100 {
		s = fmt.Sprintf("%.0f", v)
	}
	if unit == "" {
		return s
	}
	return s + " " + unit
}

// ratio formats ov/a: two decimals, or 1/N when under 0.01; "—" when a is
// zero.
func ratio(ov, a float64) string {
	switch r := ov / a; {
	case a == 0 || math.IsNaN(r) || math.IsInf(r, 0):
		return "—"
	case r > 0 && r < 0.01:
		return fmt.Sprintf("1/%.0f", math.Round(1/r))
	default:
		return fmt.Sprintf("%.2f", r)
	}
}

// list formats one value per round.
func list(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = num(v, "")
	}
	return strings.Join(s, ", ")
}

// moduleVersion is the version of module path built into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}
