package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/overtake/overtake/internal/redisproc"
)

// options are the sizes and outputs of a run, from the flags.
type options struct {
	rounds                                          int
	memTasks, workTasks, enqTasks, drainTasks, conc int
	idle, ceilingFor, lowFor, gap, waitCap, limit   time.Duration
	urgentSamples, aqUrgent, wakeSamples, aqWake    int
	out, charts, redisServer                        string
	bullmq                                          bool
	lifetime                                        time.Duration
}

// quickSizes are the sizes of -quick; flags given explicitly still win.
var quickSizes = map[string]string{
	"rounds": "1", "mem-tasks": "5000", "work-tasks": "2000", "enqueue-tasks": "5000",
	"drain-tasks": "5000", "idle": "2s", "ceiling": "500ms", "asynq-low": "500ms",
	"urgent-samples": "20", "asynq-urgent-samples": "3", "wake-samples": "10",
	"asynq-wake-samples": "5", "wake-gap": "300ms",
}

func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	quick := fs.Bool("quick", false, "small sizes and one round: a smoke test of under a minute")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each figure is the median over rounds")
	fs.IntVar(&o.memTasks, "mem-tasks", 50_000, "pending tasks (100-byte payload) of the memory figure")
	fs.IntVar(&o.workTasks, "work-tasks", 50_000, "no-op tasks enqueued and processed for the command and CPU figures (a round of 10k lasted 0.3 s for Overtake, short enough for one burst of load on a shared machine to move it)")
	fs.IntVar(&o.enqTasks, "enqueue-tasks", 50_000, "tasks of the single-Enqueue throughput figure")
	fs.IntVar(&o.drainTasks, "drain-tasks", 50_000, "pre-enqueued no-op tasks drained")
	fs.IntVar(&o.conc, "concurrency", 64, "worker concurrency of the work and drain runs")
	fs.DurationVar(&o.idle, "idle", 20*time.Second, "window of the idle-cost figure")
	fs.DurationVar(&o.ceilingFor, "ceiling", 2*time.Second, "EVALSHA ceiling time around each throughput run (half before, half after)")
	fs.DurationVar(&o.lowFor, "asynq-low", 2*time.Second, "run time of asynq's and BullMQ's low tasks in the urgent workload")
	fs.DurationVar(&o.gap, "wake-gap", 1500*time.Millisecond, "wake samples are this far apart at most (uniformly random)")
	fs.DurationVar(&o.waitCap, "wait-cap", 5*time.Second, "longest wait for an urgent or wake sample; a longer one counts as this")
	fs.DurationVar(&o.limit, "limit", 3*time.Minute, "longest any one workload may take before the run fails")
	fs.IntVar(&o.urgentSamples, "urgent-samples", 100, "Overtake urgent-latency samples per round")
	fs.IntVar(&o.aqUrgent, "asynq-urgent-samples", 5, "asynq and BullMQ urgent-latency samples per round (each waits for a low task to end)")
	fs.IntVar(&o.wakeSamples, "wake-samples", 40, "Overtake wake-latency samples per round")
	fs.IntVar(&o.aqWake, "asynq-wake-samples", 20, "asynq and BullMQ wake-latency samples per round")
	fs.StringVar(&o.out, "out", "RESULTS.md", "write the markdown table here too (empty: don't)")
	fs.StringVar(&o.charts, "charts", "charts", "write PNG charts into this directory (empty: don't)")
	fs.BoolVar(&o.bullmq, "bullmq", true, "measure BullMQ too (node sidecars in bullmq/; 'npm ci' there first if node_modules is absent); skipped with a note when node or npm is missing")
	fs.StringVar(&o.redisServer, "redis-server", "redis-server", "redis-server binary")
	fs.DurationVar(&o.lifetime, "redis-lifetime", 30*time.Minute, "redis-server is killed after this even if the benchmark hangs")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range quickSizes {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					return o, err
				}
			}
		}
	}
	if o.rounds < 1 || o.memTasks < 1 || o.workTasks < 1 || o.enqTasks < 1 || o.drainTasks < 1 || o.conc < 1 {
		return o, fmt.Errorf("rounds, task counts and concurrency must be positive")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(2)
	}
	check(run(o, command(os.Args[1:], os.Getenv("MAKELEVEL") != "")))
}

// command is how this run was started, for the record, as markdown.
func command(args []string, viaMake bool) string {
	joined := strings.Join(args, " ")
	s := "`" + strings.TrimSpace("cd bench/peers && go run . "+joined) + "`"
	if viaMake {
		s = "`make bench-peers BENCH_PEERS_ARGS='" + joined + "'`, that is " + s
	}
	return s
}

// cleanup, set by run, stops the redis-server; die runs it.
var (
	cleanupMu sync.Mutex
	cleanup   = func() {}
	dieOnce   sync.Once
)

// die reports err, stops the redis-server and exits. Any goroutine may
// call it: a failed workload ends the whole run.
func die(err error) {
	dieOnce.Do(func() {
		fmt.Fprintln(os.Stderr, "peers:", err)
		cleanupMu.Lock()
		cleanup()
		cleanupMu.Unlock()
		os.Exit(1)
	})
	select {} // another goroutine is exiting
}

// check dies on a non-nil err.
func check(err error) {
	if err != nil {
		die(err)
	}
}

// must returns v, or dies on err.
func must[T any](v T, err error) T {
	check(err)
	return v
}

// run starts the redis-server, measures every round of every system, and
// writes the table and the charts.
func run(o options, command string) error {
	srv, err := redisproc.Start(redisproc.Options{Bin: o.redisServer, Lifetime: o.lifetime,
		Args: []string{"--loglevel", "warning"}})
	if err != nil {
		return err
	}
	cleanupMu.Lock()
	cleanup = func() { _ = srv.Close() }
	cleanupMu.Unlock()
	defer srv.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { die(fmt.Errorf("%v", <-sig)) }()

	ctx := context.Background()
	adm := newAdmin(srv.Addr())
	defer adm.Close()
	systems := []workloads{native{newAQ(srv.Addr(), o.lowFor)}}
	env := runEnv{addr: srv.Addr(), redis: adm.version(ctx), machine: machine(), command: command,
		asynq: moduleVersion("github.com/hibiken/asynq"), overtake: treeVersion()}
	if !o.bullmq {
		env.skipped = "-bullmq=false"
	} else if env.bullmq, err = setupBullMQ(); err != nil {
		env.skipped = err.Error()
	}
	if env.skipped != "" {
		fmt.Fprintln(os.Stderr, "peers: BullMQ skipped:", env.skipped)
	} else {
		systems = append(systems, must(newBull(srv.Addr(), o)))
	}
	systems = append(systems, native{newOT(srv.Addr())})
	res := newResults(systems)
	env.load[0] = loadAvg()
	for r := 1; r <= o.rounds; r++ {
		for _, s := range systems {
			fmt.Fprintf(os.Stderr, "peers: round %d/%d, %s\n", r, o.rounds, s.name())
			res.add(s, measureOnce(ctx, adm, s, o))
		}
	}
	env.load[1] = loadAvg()
	table := res.table(o, env)
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

// machine describes where the run happened: CPUs (nproc), GOMAXPROCS, Go.
func machine() string {
	return fmt.Sprintf("nproc %d, GOMAXPROCS %d, %s %s/%s", goruntime.NumCPU(), goruntime.GOMAXPROCS(0),
		goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
}
