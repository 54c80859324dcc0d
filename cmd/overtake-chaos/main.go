package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/overtake/overtake/internal/redisproc"
)

type options struct {
	tasks, urgentEvery, baseUrgent int
	rate                           float64
	killEvery                      time.Duration
	cut                            time.Duration
	timeout                        time.Duration
	redisServer                    string
	workers                        int
	// The failover scenario: tasks (0: skip it), workers, and how often the
	// primary is killed (0: once, halfway through the feed).
	foTasks, foWorkers int
	foEvery            time.Duration
	// failbacks is how many fail-backs follow the failover scenario.
	failbacks int
	// cycle repeats the chaos phase's one-off faults (SIGSTOP, network cut,
	// Redis kill) every cycle; 0 means once.
	cycle time.Duration
}

func main() {
	if len(os.Args) == 5 && os.Args[1] == "worker" {
		if err := runWorker(os.Args[2], os.Args[3], os.Args[4]); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.IntVar(&o.tasks, "tasks", 20_000, "tasks enqueued during the chaos")
	flag.Float64Var(&o.rate, "rate", 250, "tasks enqueued per second")
	flag.IntVar(&o.urgentEvery, "urgent-every", 50, "one urgent task every this many tasks")
	flag.IntVar(&o.baseUrgent, "baseline-urgent", 40, "urgent tasks of the baseline run, without chaos")
	flag.IntVar(&o.workers, "workers", 3, "worker processes")
	flag.DurationVar(&o.killEvery, "kill-every", 5*time.Second, "SIGKILL a random worker this often")
	flag.DurationVar(&o.cut, "cut", 10*time.Second, "how long the network to Redis is cut")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	flag.StringVar(&o.redisServer, "redis-server", "redis-server", "redis-server binary (also run as the sentinels)")
	flag.IntVar(&o.foTasks, "failover-tasks", 3000, "tasks of the Sentinel failover scenario (0: skip it)")
	flag.IntVar(&o.foWorkers, "failover-workers", 2, "worker processes of the failover scenario")
	flag.DurationVar(&o.foEvery, "failover-every", 0, "kill the primary this often (0: once, halfway)")
	flag.IntVar(&o.failbacks, "failbacks", 1, "fail-backs after the failover scenario, each measured with probes (0: none)")
	flag.DurationVar(&o.cycle, "cycle", 0, "repeat the SIGSTOP, network cut and Redis kill this often (0: once; at least 40s)")
	duration := flag.Duration("duration", 0, "soak: run for about this long (sets -tasks, -failover-tasks, -cycle, -failover-every, -timeout, and -rate unless given)")
	flag.Parse()
	if *duration > 0 {
		rateSet := false
		flag.Visit(func(f *flag.Flag) { rateSet = rateSet || f.Name == "rate" })
		if !rateSet {
			o.rate = soakRate
		}
		o = soak(o, *duration)
	}
	if o.cycle > 0 && o.cycle < 40*time.Second {
		fmt.Fprintln(os.Stderr, "chaos: -cycle must be 0 or at least 40s (its faults are at 3, 10 and 25 s)")
		os.Exit(2)
	}
	os.Exit(runSuite(o))
}

// soakRate is a soak's rate unless -rate is given: about three quarters of
// what the chaos phase's 24 slots and the failover scenario's 16 can run,
// so that no backlog builds up over the hours (at 250/s it does).
const soakRate = 100

// soak sizes a run of about d: two thirds of it the chaos phase with its
// faults every minute, one third the failover scenario with the primary
// killed every 30 s, and a timeout of d plus ten minutes.
func soak(o options, d time.Duration) options {
	o.tasks = int(o.rate * d.Seconds() * 2 / 3)
	o.foTasks = int(o.rate * d.Seconds() / 3)
	o.cycle, o.foEvery = time.Minute, 30*time.Second
	o.timeout = max(o.timeout, d+10*time.Minute)
	return o
}

// runSuite runs the suite within o.timeout, prints its table and returns the
// exit code: 1 on an error or a breached invariant.
func runSuite(o options) int {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	rep, err := run(ctx, o)
	if err == nil && o.foTasks > 0 {
		var self string
		if self, err = os.Executable(); err == nil {
			rep.failover, err = runFailover(ctx, o, self, rep.logs)
		}
	}
	if rep != nil {
		fmt.Print(rep.table(o))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	if rep.breached() {
		fmt.Fprintln(os.Stderr, "chaos: FAILED: an invariant was breached (see the table)")
		return 1
	}
	return 0
}

func run(ctx context.Context, o options) (*report, error) {
	// Redis with its AOF fsynced on every write, so that it can be killed and
	// restarted from it on the same port.
	rs, err := redisproc.Start(redisproc.Options{Bin: o.redisServer, Persistent: true,
		Lifetime: o.timeout + time.Minute, Args: []string{"--loglevel", "warning"}})
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	px, err := startProxy(rs.Addr())
	if err != nil {
		return nil, err
	}
	defer px.close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logs, err := os.MkdirTemp("", "overtake-chaos-logs-")
	if err != nil {
		return nil, err
	}
	fl := &fleet{bin: self, addr: px.addr(), logDir: logs}
	for i := range o.workers {
		if err := fl.start(i); err != nil {
			return nil, err
		}
	}
	defer fl.stopAll()
	pr := newProducer(rs.Addr())
	defer pr.close()
	rep := &report{logs: logs}
	start := time.Now()

	// Baseline: the same workload, no faults, for the urgent latency.
	if err := pr.feed(ctx, "base", o.baseUrgent*o.urgentEvery, o.rate, o.urgentEvery); err != nil {
		return rep, err
	}
	if err := pr.waitDone(ctx, pr.enqueued); err != nil {
		return rep, err
	}
	// The chaos: faults while the tasks flow.
	cctx, stopFaults := context.WithCancel(ctx)
	faults := make(chan []string, 1)
	go func() { faults <- chaos(cctx, o, fl, rs, px) }()
	err = pr.feed(ctx, "chaos", o.tasks, o.rate, o.urgentEvery)
	stopFaults()
	rep.faults = <-faults
	if err != nil {
		return rep, err
	}
	if err := fl.ensureAll(); err != nil {
		return rep, err
	}
	if err := pr.waitDone(ctx, pr.enqueued); err != nil {
		rep.collect(ctx, pr, time.Since(start))
		return rep, err
	}
	rep.collect(ctx, pr, time.Since(start))
	return rep, nil
}
