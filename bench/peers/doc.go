// Command peers benchmarks Overtake against hibiken/asynq and BullMQ on
// one redis-server that it starts on a free 127.0.0.1 port (persistence
// off, stopped at exit, killed by timeout(1) if the benchmark hangs or
// dies), in one run of several rounds. For each system it measures Redis
// memory per pending task, Redis commands and CPU per processed task,
// single Enqueue and drain throughput as fractions of the EVALSHA ceiling
// measured in the same run, Redis's and the client process's CPU per 10k
// tasks of those runs, batch enqueue, the Redis commands of an idle worker,
// urgent-task and wake latency, and a bare PING after the wake's idle gaps
// (the machine's floor for a wake). It prints a markdown table of medians
// (every round listed too), writes it to RESULTS.md and draws PNG charts
// into charts/.
//
// BullMQ runs natively: each workload is a node process of its own,
// bullmq/run.mjs, with handlers in JS, that prints its result as a JSON
// line; this side measures Redis around it as it does around asynq and
// Overtake. The package is pinned by bullmq/package-lock.json and
// installed with `npm ci` on the first run; without node or npm the
// BullMQ column is left out, with a note (so is it with -bullmq=false).
//
//	make bench-peers                         # from the repository root
//	cd bench/peers && go run . -quick        # a smoke test, under a minute
//	cd bench/peers && go run . -rounds 5 -out '' -charts /tmp/c
//
// It is a module of its own so that asynq never enters Overtake's go.mod,
// nor node `make test`; it uses Overtake's public API only (queue,
// handlers, runtime, preempt), and internal/redisproc to start the
// redis-server.
package main
