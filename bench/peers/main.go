package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

type options struct {
	rounds                                int
	memTasks, workTasks, drainTasks, conc int
	idle, ceilingFor, lowFor              time.Duration
	urgentSamples, aqUrgent, wakeSamples  int
	aqWake                                int
	out, charts, redisServer              string
}

func main() {
	var o options
	quick := flag.Bool("quick", false, "small sizes and one round, for a smoke test")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each figure is the median over rounds")
	flag.IntVar(&o.memTasks, "mem-tasks", 50_000, "pending tasks (100-byte payload) for the memory figure")
	flag.IntVar(&o.workTasks, "work-tasks", 10_000, "no-op tasks enqueued and processed for the command and CPU figures")
	flag.IntVar(&o.drainTasks, "drain-tasks", 50_000, "pre-enqueued no-op tasks drained")
	flag.IntVar(&o.conc, "concurrency", 64, "worker concurrency of the work and drain runs")
	flag.DurationVar(&o.idle, "idle", 20*time.Second, "window of the idle-cost figure")
	flag.DurationVar(&o.ceilingFor, "ceiling", 2*time.Second, "duration of each EVALSHA ceiling measurement")
	flag.DurationVar(&o.lowFor, "asynq-low", 2*time.Second, "run time of asynq's low tasks in the urgent workload")
	flag.IntVar(&o.urgentSamples, "urgent-samples", 100, "Overtake urgent-latency samples")
	flag.IntVar(&o.aqUrgent, "asynq-urgent-samples", 5, "asynq urgent-latency samples (each waits for a low task to end)")
	flag.IntVar(&o.wakeSamples, "wake-samples", 200, "Overtake wake-latency samples")
	flag.IntVar(&o.aqWake, "asynq-wake-samples", 20, "asynq wake-latency samples")
	flag.StringVar(&o.out, "out", "RESULTS.md", "write the markdown table here too (empty: don't)")
	flag.StringVar(&o.charts, "charts", "charts", "write PNG charts into this directory (empty: don't)")
	flag.StringVar(&o.redisServer, "redis-server", "redis-server", "redis-server binary")
	flag.Parse()
	if *quick {
		o.rounds, o.memTasks, o.workTasks, o.drainTasks = 1, 5000, 2000, 5000
		o.idle, o.ceilingFor, o.lowFor = 2*time.Second, 500*time.Millisecond, 500*time.Millisecond
		o.urgentSamples, o.aqUrgent, o.wakeSamples, o.aqWake = 20, 2, 20, 5
	}
	if err := run(o, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(o options, args []string) error {
	srv, err := startServer(o.redisServer, 2*time.Hour)
	if err != nil {
		return err
	}
	defer srv.stop()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.addr})
	defer admin.Close()
	systems := []system{newAQ(srv.addr, o.lowFor), newOT(srv.addr)}
	res := newResults(systems)
	for r := 1; r <= o.rounds; r++ {
		res.ceil16 = append(res.ceil16, ceiling(ctx, srv.addr, 16, o.ceilingFor))
		res.ceil64 = append(res.ceil64, ceiling(ctx, srv.addr, 64, o.ceilingFor))
		for _, s := range systems {
			fmt.Fprintf(os.Stderr, "peers: round %d/%d, %s\n", r, o.rounds, s.name())
			res.add(s, measureOnce(ctx, admin, s, o))
		}
	}
	table := res.table(o, srv.addr, redisVersion(ctx, admin), "make bench-peers BENCH_PEERS_ARGS='"+strings.Join(args, " ")+"'")
	fmt.Print(table)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if o.charts != "" {
		return res.charts(o.charts)
	}
	return nil
}

// measureOnce runs every workload of s once, each on a flushed Redis.
func measureOnce(ctx context.Context, admin *redis.Client, s system, o options) figures {
	flush := func() { _ = admin.FlushAll(ctx).Err() }
	var f figures
	flush()
	f.mem = s.memory(ctx, o.memTasks, []byte(strings.Repeat("p", 100)))
	flush()
	_ = admin.ConfigResetStat(ctx).Err()
	cpu0 := cpuSeconds(ctx, admin)
	s.work(ctx, o.workTasks, o.conc)
	f.cmds = float64(commandCalls(ctx, admin)-1) / float64(o.workTasks)
	f.cpu = (cpuSeconds(ctx, admin) - cpu0) * 1000 * 10_000 / float64(o.workTasks)
	flush()
	f.enq = s.enqueue(ctx, o.workTasks, 16)
	flush()
	f.drain = s.drain(ctx, o.drainTasks, o.conc)
	flush()
	f.idle = s.idle(ctx, o.idle)
	flush()
	n, _ := samplesFor(s, o)
	u := s.urgent(ctx, n)
	f.urgent50, f.urgent99 = percentile(u, 50), percentile(u, 99)
	flush()
	_, w := samplesFor(s, o)
	wk := s.wake(ctx, w)
	f.wake50, f.wake99 = percentile(wk, 50), percentile(wk, 99)
	return f
}

func samplesFor(s system, o options) (urgent, wake int) {
	if s.name() == "asynq" {
		return o.aqUrgent, o.aqWake
	}
	return o.urgentSamples, o.wakeSamples
}

// machine describes where the run happened.
func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d CPUs, GOMAXPROCS %d, %s", host, goruntime.NumCPU(), goruntime.GOMAXPROCS(0), goruntime.Version())
}
