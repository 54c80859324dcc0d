package main

import (
	"fmt"
	"strings"
	"time"
)

const roundTo = time.Millisecond

// throughputRows adds figures 1, 2, 3, 8 and 9 from the throughput runs
// and the Redis ceiling.
func (b *bench) throughputRows(t *table, best tputBest, c ceil) {
	o := b.opts
	on := best.on
	t.add(row{id: "1", figure: fmt.Sprintf("throughput, no-op tasks, Concurrency %d, 3 levels, preemption on, tracing off",
		o.concurrency), value: num(on.tasksPer), unit: "tasks/s", target: "—",
		note: fmt.Sprintf("info: %d tasks in %v, best of runs %s; CPU per task: %s; pre-enqueue %s tasks/s (EnqueueBatch of %d from %d goroutines)",
			on.n, on.elapsed.Round(roundTo), runs(best.runs["on"]), cpu(on), num(float64(on.n)/on.enqueue.Seconds()), o.batch, fillers)})

	trips := float64(on.trips.trips) / float64(on.n)
	batch := 0.0
	if leases := on.trips.kinds["lease"]; leases > 0 {
		batch = float64(on.trips.leased) / float64(leases)
	}
	t.add(row{id: "2", figure: "Redis round trips per task, steady state (runtime client hook)", value: num(trips),
		unit: "round trips/task", target: "<= 2",
		note: fmt.Sprintf("%s: per task: %s; %.2f tasks per lease call", verdict(trips <= 2), on.trips.perTask(on.n), batch)})

	if c.err != nil {
		t.skip("3", "Redis ceiling", c.err)
	} else {
		t.add(row{id: "3", figure: fmt.Sprintf("Redis ceiling: EVALSHA of `return 1`, %d goroutines, go-redis", o.concurrency),
			value: num(c.evalsha), unit: "ops/s", target: "—",
			note: fmt.Sprintf("info: same client options as the runtime; redis-server CPU %s µs per EVALSHA", num(us(c.cpu)))})
		t.add(row{id: "3", figure: fmt.Sprintf("Redis ceiling: PING, %d goroutines, go-redis", o.concurrency),
			value: num(c.ping), unit: "ops/s", target: "—", note: "info"})
		t.add(row{id: "3", figure: "throughput / EVALSHA ceiling", value: num(on.tasksPer / c.evalsha), unit: "fraction",
			target: "—", note: fmt.Sprintf("info: round trips used: %s × %s = %s/s, %.0f%% of the ceiling; redis-server CPU per task = %s trivial EVALSHAs",
				num(on.tasksPer), num(trips), num(on.tasksPer*trips), 100*on.tasksPer*trips/c.evalsha, num(float64(on.redisCPU)/float64(c.cpu)))})
	}

	off := best.off
	cost := 1 - on.tasksPer/off.tasksPer
	t.add(row{id: "8", figure: "throughput, preemption disabled (same tasks, same mix)", value: num(off.tasksPer),
		unit: "tasks/s", target: "—", note: fmt.Sprintf("info: %v, best of runs %s; CPU per task: %s; %s round trips/task",
			off.elapsed.Round(roundTo), runs(best.runs["off"]), cpu(off), num(float64(off.trips.trips)/float64(off.n)))})
	t.add(row{id: "8", figure: "cost of preemption: 1 − on/off", value: num(100 * cost), unit: "%", target: "< 10%",
		note: fmt.Sprintf("%s: on/off = %s; in-process CPU per task %+.1f%%", verdict(cost < 0.10),
			num(on.tasksPer/off.tasksPer), 100*(float64(on.cpu)/float64(off.cpu)-1))})

	tr := best.traced
	tcost := 1 - tr.tasksPer/on.tasksPer
	figure := "throughput, tracing on (otlp.Setup, AlwaysSample, batch processor, OTLP/HTTP to a local sink)"
	note := fmt.Sprintf("info: traces; sink got %d spans for %d tasks in %d requests", best.spans, tr.n, best.exports)
	if o.metrics {
		note = fmt.Sprintf("info: traces and metrics; sink got %d spans for %d tasks in %d requests", best.spans, tr.n, best.exports)
	}
	if o.traceExporter == "discard" {
		figure = "throughput, tracing on (SDK TracerProvider, AlwaysSample, batch processor, discarding exporter)"
		note = fmt.Sprintf("info: exporter got %d spans for %d tasks", best.spans, tr.n)
	}
	note += "; best of runs " + runs(best.runs["traced"]) + "; CPU per task: " + cpu(tr)
	t.add(row{id: "9", figure: figure, value: num(tr.tasksPer), unit: "tasks/s", target: "—", note: note})
	t.add(row{id: "9", figure: "cost of tracing: 1 − on/off", value: num(100 * tcost), unit: "%", target: "< 15%",
		note: fmt.Sprintf("%s: traced/untraced = %s; in-process CPU per task %+.1f%% (OTLP: the sink decoding spans runs in this process too)",
			verdict(tcost < 0.15), num(tr.tasksPer/on.tasksPer), 100*(float64(tr.cpu)/float64(on.cpu)-1))})
}

// runs lists the tasks/s of every run of a variant, in run order.
func runs(rates []float64) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = num(r)
	}
	return strings.Join(parts, ", ")
}

// cpu formats a run's CPU time per task: this process, then redis-server.
func cpu(r tputResult) string {
	return fmt.Sprintf("bench process %s µs, redis-server %s µs", num(us(r.cpu)), num(us(r.redisCPU)))
}
