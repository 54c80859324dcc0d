package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// shardFigure is the table id of the shard section's rows.
const shardFigure = "13"

// shardTarget is the bound on the busiest master's Redis CPU per
// task with K shards over K = 1's.
const shardTarget = 0.4

// shardResult is the whole shard section: the cluster and a run per K.
type shardResult struct {
	Source      string      `json:"source"` // the cluster was "started" or "given"
	Masters     []string    `json:"masters"`
	Slots       []string    `json:"slots"`
	Tasks       int         `json:"tasks"` // per enqueue phase
	Concurrency int         `json:"concurrency"`
	Placement   string      `json:"placement"` // --shard-placement
	Runs        []*shardRun `json:"runs"`      // per K of --shards, the medians of its rounds (medianRun)
	// Each holds every round of each K: Each[i][j] is round j of Runs[i].
	Each [][]*shardRun `json:"each_round"`
	// Calib holds each round's calibration (shards_calib.go), run before
	// the round's queues.
	Calib []calibration `json:"calibration"`
	took  time.Duration
	load  [2]string // load average at start and at end
}

// shardsSection measures the shard section (--only shards) on its own
// Redis Cluster and prints its table to w.
func shardsSection(ctx context.Context, o options, w io.Writer) error {
	res, err := measureShards(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "overtake-bench shards: %d-master Redis Cluster (%s) %v, %d tasks per enqueue phase, %s, GOMAXPROCS %d, %d CPUs, took %s, load average %s at start, %s at end\n\n",
		len(res.Masters), res.Source, res.Masters, res.Tasks, roundsNote(len(res.Each[0])), gomaxprocs(), goruntime.NumCPU(), res.took.Round(time.Second),
		res.load[0], res.load[1])
	fmt.Fprintf(w, "On a machine of %d CPUs the masters, the producers and the worker share cores, so the measured throughput cannot grow with K; the projected ceiling (one core per master / the busiest master's Redis CPU per task) is the claim.\n\n",
		goruntime.NumCPU())
	t := &table{}
	res.rows(t)
	t.write(w)
	if o.shardsJSON == "" {
		return nil
	}
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.shardsJSON, append(out, '\n'), 0o644)
}

// measureShards starts (or connects to) the cluster and runs every K of
// --shards in turn on a fresh queue.
func measureShards(ctx context.Context, o options) (*shardResult, error) {
	ks, err := parseShards(o.shards)
	if err != nil {
		return nil, err
	}
	if o.shardTasks < 1 || o.concurrency < 1 || o.batch < 1 {
		return nil, errors.New("--shard-tasks, --concurrency and --batch must be positive")
	}
	if err := checkPlacement(o.shardPlacement); err != nil {
		return nil, err
	}
	t0, load0 := time.Now(), loadavg()
	c, err := openCluster(ctx, o)
	if err != nil {
		return nil, err
	}
	defer c.close()
	s := &shardBench{c: c, ns: "overtake-bench-" + randHex(4), o: o}
	if c.source == "given" {
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.deleteAll(dctx, s.ns); err != nil {
				fmt.Fprintln(os.Stderr, "warning: cleanup:", err)
			}
		}()
	}
	res := &shardResult{Source: c.source, Masters: c.masters, Slots: c.slots, Tasks: o.shardTasks, Concurrency: o.concurrency,
		Placement: o.shardPlacement}
	res.Each = make([][]*shardRun, len(ks))
	rounds := max(o.shardRounds, 1)
	for j := range rounds {
		if rounds > 1 {
			progress("shards: round %d of %d", j+1, rounds)
		}
		progress("shards: calibration, %d calls a master alone, then on every master at once", calibCalls)
		cal, err := s.calibrate(ctx)
		if err != nil {
			return nil, err
		}
		res.Calib = append(res.Calib, cal)
		for i, k := range ks {
			r, err := s.run(ctx, k, o.shardTasks)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("interrupted: %w", context.Cause(ctx))
			}
			if err != nil {
				r = &shardRun{K: k, Err: err.Error()}
			}
			res.Each[i] = append(res.Each[i], r)
		}
	}
	for i := range ks {
		res.Runs = append(res.Runs, medianRun(res.Each[i]))
	}
	res.took, res.load = time.Since(t0), [2]string{load0, loadavg()}
	return res, nil
}

// rows adds a row per master of every K, the projected ceiling of every
// K, and the ratio of each K's busiest master to K = 1's.
func (res *shardResult) rows(t *table) {
	var base *shardRun
	bi := 0 // base's index in Runs
	for i, r := range res.Runs {
		name := r.name()
		switch {
		case r.Err != "":
			t.skip(shardFigure, name, errors.New(r.Err))
			continue
		case r.Unsupported != "":
			t.add(row{id: shardFigure, figure: name, value: "—", target: "—", note: "not supported by this build: " + r.Unsupported})
			continue
		}
		if r.K == 1 {
			base, bi = r, i
		}
		for m := range res.Masters {
			t.add(row{id: shardFigure, value: num(per10k(r.life(phaseEnqueue, m))), unit: "ms/10k tasks", target: "—",
				figure: fmt.Sprintf("%s, master %d %s (slots %s; %d of the queue's hash tags): Redis CPU per 10k tasks, single Enqueue + drain",
					name, m+1, res.Masters[m], res.Slots[m], r.Tags[m]),
				note: fmt.Sprintf("info: Redis CPU per 10k tasks: EnqueueBatch %s ms, single Enqueue %s ms, drain %s ms; commands per task (commands inside scripts included): EnqueueBatch %s, single Enqueue %s, drain %s",
					num(per10k(r.cpuPerTask(phaseBatch, m))), num(per10k(r.cpuPerTask(phaseEnqueue, m))), num(per10k(r.cpuPerTask(phaseDrain, m))),
					num(r.cmdsPerTask(phaseBatch, m)), num(r.cmdsPerTask(phaseEnqueue, m)), num(r.cmdsPerTask(phaseDrain, m)))})
		}
		m, most := r.busiest(phaseEnqueue)
		mb, mostB := r.busiest(phaseBatch)
		d := r.Phases[phaseDrain]
		t.add(row{id: shardFigure, value: num(ceilingOf(most)), unit: "tasks/s", target: "—",
			figure: name + ": projected ceiling of one queue, one core per master / the busiest master's Redis CPU per task (single Enqueue + drain)",
			note: fmt.Sprintf("info: busiest master %d, %s µs/task; all masters together %s µs/task; the queue's hash tags on masters 1..%d: %s (--shard-placement %s, queue %s%s); with EnqueueBatch + drain %s tasks/s (master %d, %s µs/task); measured here: EnqueueBatch %s tasks/s, single Enqueue %s tasks/s (%d goroutines), drain %s tasks/s (Concurrency %d, %s worker client calls/task: %s)",
				m+1, num(us(most)), num(us(r.total(phaseEnqueue))), len(r.Tags), runsInt(r.Tags), res.Placement, r.Queue, planNote(r), num(ceilingOf(mostB)), mb+1, num(us(mostB)),
				num(r.rate(phaseBatch)), num(r.rate(phaseEnqueue)), res.Concurrency, num(r.rate(phaseDrain)), res.Concurrency,
				num(float64(d.Calls)/float64(d.Tasks)), d.Kinds)})
	}
	res.calibRow(t)
	if base == nil {
		return
	}
	_, one := base.busiest(phaseEnqueue)
	_, oneB := base.busiest(phaseBatch)
	for i, r := range res.Runs {
		if r == base || r.Err != "" || r.Unsupported != "" {
			continue
		}
		_, most := r.busiest(phaseEnqueue)
		_, mostB := r.busiest(phaseBatch)
		ratio := float64(most) / float64(one)
		if r.K < 0 {
			t.add(row{id: shardFigure, value: num(ratio), unit: "fraction", target: "—",
				figure: r.name() + " / K=1: the busiest master's Redis CPU per task, single Enqueue + drain (the split users make today, for comparison)",
				note:   fmt.Sprintf("info: with EnqueueBatch + drain %s%s", num(float64(mostB)/float64(oneB)), res.roundRatios(i, bi))})
			continue
		}
		t.add(row{id: shardFigure, value: num(ratio), unit: "fraction", target: fmt.Sprintf("<= %.1f", shardTarget),
			figure: fmt.Sprintf("shards K=%d / K=1: the busiest master's Redis CPU per task, single Enqueue + drain", r.K),
			note: fmt.Sprintf("%s: projected ceiling %s× K=1's; with EnqueueBatch + drain %s; by phase, the busiest master's of each over K=1's: single Enqueue %s, drain %s%s%s",
				verdict(ratio <= shardTarget), num(1/ratio), num(float64(mostB)/float64(oneB)),
				num(float64(r.mostIn(phaseEnqueue))/float64(base.mostIn(phaseEnqueue))),
				num(float64(r.mostIn(phaseDrain))/float64(base.mostIn(phaseDrain))), res.roundRatios(i, bi), res.machineNote())})
	}
}

// roundsNote says what the figures are: one round's, or medians.
func roundsNote(n int) string {
	if n == 1 {
		return "one round"
	}
	return fmt.Sprintf("medians of %d rounds (each K in turn each round)", n)
}

// rate is phase p's measured tasks a second.
func (r *shardRun) rate(p int) float64 {
	ph := r.Phases[p]
	return float64(ph.Tasks) / ph.Elapsed.Seconds()
}

// total is every master's Redis CPU time together for one task's life,
// enqueued by phase enq.
func (r *shardRun) total(enq int) time.Duration {
	var t time.Duration
	for m := range r.Tags {
		t += r.life(enq, m)
	}
	return t
}

// planNote flags a placement found other than planned: the tag layout of
// internal/store changed under the bench.
func planNote(r *shardRun) string {
	if slices.Equal(r.Tags, r.Planned) {
		return ""
	}
	return "; planned " + runsInt(r.Planned)
}

// runsInt lists counts, comma-separated.
func runsInt(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}

// per10k is a per-task CPU time in milliseconds per 10,000 tasks.
func per10k(d time.Duration) float64 { return float64(d) * 10_000 / float64(time.Millisecond) }

// ceilingOf is the tasks a second one core allows at cpu per task.
func ceilingOf(cpu time.Duration) float64 {
	if cpu <= 0 {
		return 0
	}
	return float64(time.Second) / float64(cpu)
}

// name names r in the table: "shards K=<k>", or "<n> queues of one
// shard" for a split run (shards_split.go).
func (r *shardRun) name() string {
	if r.K < 0 {
		return fmt.Sprintf("%d queues of one shard, one per master, no common order", -r.K)
	}
	return fmt.Sprintf("shards K=%d", r.K)
}
