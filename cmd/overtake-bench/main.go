package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/overtake/overtake/internal/redisproc"
)

// options are the command-line flags.
type options struct {
	redis          string
	startRedis     bool
	redisServer    string
	tasks          int
	concurrency    int
	batch          int
	rounds         int
	wakeSamples    int
	preemptSamples int
	cancelSamples  int
	cancelBeats    int
	idle           time.Duration
	ceiling        time.Duration
	checkpointOps  int
	poolSize       int
	protocol       int
	metrics        bool
	resumeLong     bool
	traceExporter  string
	cpuProfile     string
	only           string
	shards         string // the shard section (shards.go)
	shardTasks     int
	shardRounds    int
	cluster        string
	shardsJSON     string
	shardPlacement string
	queueShards    int
	runLimit       time.Duration
	timeout        time.Duration
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.redis, "redis", os.Getenv("OVERTAKE_REDIS_ADDR"),
		"host:port of the Redis to measure against (default $OVERTAKE_REDIS_ADDR); empty starts one with --start-redis")
	flag.BoolVar(&o.startRedis, "start-redis", true,
		"when --redis is empty, start a redis-server on a free 127.0.0.1 port and stop it at exit")
	flag.StringVar(&o.redisServer, "redis-server", "redis-server", "redis-server binary for --start-redis")
	flag.IntVar(&o.tasks, "tasks", 100_000, "no-op tasks per throughput run (figures 1, 2, 8, 9)")
	flag.IntVar(&o.concurrency, "concurrency", 64, "runtime Concurrency of the throughput runs")
	flag.IntVar(&o.batch, "batch", 1000, "tasks per EnqueueBatch call when pre-enqueueing")
	flag.IntVar(&o.rounds, "rounds", 2, "throughput runs per variant, interleaved; the best of each is reported")
	flag.IntVar(&o.wakeSamples, "wake-samples", 1000, "samples of wake latency (figure 4)")
	flag.IntVar(&o.preemptSamples, "preempt-samples", 300, "samples of preemption latency (figure 6)")
	flag.IntVar(&o.cancelSamples, "cancel-samples", 300, "samples of cancel latency by the wake message (figure 12)")
	flag.IntVar(&o.cancelBeats, "cancel-beats", 5, "samples of cancel latency by the heartbeat, Pub/Sub down (figure 12)")
	flag.DurationVar(&o.idle, "idle", 10*time.Second, "window of the idle-cost measurement (figure 5)")
	flag.DurationVar(&o.ceiling, "ceiling", 2*time.Second, "duration of each Redis ceiling measurement (figure 3)")
	flag.IntVar(&o.checkpointOps, "checkpoint-ops", 3000, "sequential checkpoint saves timed (figure 7)")
	flag.IntVar(&o.poolSize, "pool-size", 0, "go-redis PoolSize of every client (0: go-redis default, 10 per GOMAXPROCS)")
	flag.IntVar(&o.protocol, "protocol", 0, "go-redis Protocol of every client: 2 (RESP2) or 3 (RESP3); 0: go-redis default, 3")
	flag.BoolVar(&o.metrics, "metrics", false, "also export OTLP metrics in the tracing-on run (figure 9)")
	flag.StringVar(&o.traceExporter, "trace-exporter", "otlp",
		"figure 9 exporter: otlp (otlp.Setup, OTLP/HTTP to a local sink) or discard (SDK batch processor, spans dropped)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.BoolVar(&o.resumeLong, "resume-long", false,
		"in figure 6 let each resumed victim run on to be preempted again, instead of finishing and being replaced by a fresh low task")
	flag.StringVar(&o.only, "only", "", "comma-separated figure groups to run: ceiling,tput,checkpoint,wake,preempt,cancel,idle (default all), cpu (CPU per task by side), spread (preemptions across victims) and shards (one queue over a Redis Cluster), only when named")
	flag.StringVar(&o.shards, "shards", "1,3,6,3q", "--only shards: the queue's Shards of each run; <n>q: n separate queues of one shard, one per master (today's split, for comparison)")
	flag.IntVar(&o.shardTasks, "shard-tasks", 50_000, "--only shards: tasks of each enqueue phase (EnqueueBatch, then single Enqueue); the drain takes both")
	flag.IntVar(&o.shardRounds, "shard-rounds", 3, "--only shards: rounds, each running every K of --shards in turn; the table gives medians, the ratio row each round's own too")
	flag.StringVar(&o.cluster, "cluster", "", "--only shards: comma-separated host:port of a running Redis Cluster; empty starts 3 masters on 127.0.0.1")
	flag.IntVar(&o.queueShards, "queue-shards", 1,
		"Shards of the queue of the throughput, cpu, wake and preempt figures (on --redis: every shard on one server, which measures the sharded protocol's round trips, not its scale)")
	flag.StringVar(&o.shardsJSON, "shards-json", "", "--only shards: also write the figures as JSON to this file")
	flag.StringVar(&o.shardPlacement, "shard-placement", "balanced",
		"--only shards: balanced (a queue name whose hash tags spread evenly over the masters) or random (wherever they land)")
	flag.DurationVar(&o.runLimit, "run-limit", 2*time.Minute, "bound on one throughput run")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on the whole command")
	flag.Parse()
	return o
}

func main() {
	if os.Getenv(envCancelWorker) != "" { // a worker process of figure 12 (cancel.go)
		os.Exit(cancelWorker())
	}
	o := parseFlags()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "overtake-bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.tasks < 1 || o.concurrency < 1 || o.batch < 1 || o.rounds < 1 || o.wakeSamples < 1 ||
		o.preemptSamples < 1 || o.checkpointOps < 1 || o.cancelSamples < 1 || o.cancelBeats < 1 {
		return errors.New("counts must be positive")
	}
	if o.traceExporter != "otlp" && o.traceExporter != "discard" {
		return fmt.Errorf("--trace-exporter %q: want otlp or discard", o.traceExporter)
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if groups := strings.Split(o.only, ","); slices.Contains(groups, "shards") { // its own cluster and table
		if err := shardsSection(ctx, o, os.Stdout); err != nil || len(groups) == 1 {
			return err
		}
	}

	addr, source := o.redis, "given"
	if addr == "" {
		if !o.startRedis {
			return errors.New("no --redis address and --start-redis=false")
		}
		srv, err := redisproc.Start(redisproc.Options{Bin: o.redisServer, Lifetime: o.timeout + time.Minute,
			Args: []string{"--loglevel", "warning"}})
		if err != nil {
			return err
		}
		defer srv.Close()
		addr, source = srv.Addr(), "started"
	}
	b := &bench{addr: addr, ns: "overtake-bench-" + randHex(4), opts: o}
	b.prod = newClient(addr, o)
	defer b.prod.Close()
	version, err := redisVersion(ctx, b)
	if err != nil {
		return fmt.Errorf("redis at %s: %w", addr, err)
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer dcancel()
		if err := deleteKeys(dctx, b.prod, b.ns); err != nil {
			fmt.Fprintln(os.Stderr, "warning: cleanup:", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "overtake-bench: redis %s at %s (%s), namespace %s\n", version, addr, source, b.ns)

	t0, load0 := time.Now(), loadavg()
	t := &table{}
	b.figures(ctx, t)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	fmt.Printf("overtake-bench: redis %s on %s (%s), GOMAXPROCS %d, %d tasks x %d round(s), took %s, load average %s at start, %s at end\n\n",
		version, addr, source, gomaxprocs(), o.tasks, o.rounds, time.Since(t0).Round(time.Second), load0, loadavg())
	t.write(os.Stdout)
	return nil
}

func redisVersion(ctx context.Context, b *bench) (string, error) {
	info, err := b.prod.InfoMap(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	return info["Server"]["redis_version"], nil
}

// loadavg returns the 1-minute load average, which says how much the
// figures of a shared machine can be trusted.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "n/a"
	}
	return f[0]
}

func randHex(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}
