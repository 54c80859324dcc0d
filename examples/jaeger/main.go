package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/overtake/overtake/tracing/otlp"
)

// ReportArgs is the payload of a "report": Steps steps of StepMs each.
type ReportArgs struct {
	Name   string `json:"name"`
	Steps  int    `json:"steps"`
	StepMs int    `json:"step_ms"`
}

// Progress is a report's checkpoint: the steps done so far.
type Progress struct {
	Done int `json:"done"`
}

// config is what one run of the example needs.
type config struct {
	rounds   int           // 0: until interrupted
	interval time.Duration // pause between rounds
	step     time.Duration // one step of a report
	tp       trace.TracerProvider
	worker   string // runtime.Config.WorkerID; "" for the runtime's default
	log      *zap.Logger
	out      io.Writer
	backoff  func(int) time.Duration // retry backoff; nil: the queue's default
}

func main() {
	if err := runMain(); err != nil {
		log.Fatal(err)
	}
}

// runMain is main with an error, so that its deferred calls run before
// the process exits.
func runMain() error {
	rounds := flag.Int("rounds", 0, "rounds to run; 0 runs until SIGINT/SIGTERM")
	interval := flag.Duration("interval", 10*time.Second, "pause between rounds")
	step := flag.Duration("step", 250*time.Millisecond, "duration of one report step")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := otlp.Setup(ctx, otlp.WithServiceName("overtake-example"), otlp.WithoutMetrics())
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Shutdown(sctx); err != nil { // flushes the last spans
			log.Print(err)
		}
	}()
	logger, err := zap.NewProduction() // JSON lines with task_id, task_type, task_level, trace_id
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()

	opt, err := redis.ParseURL(cmp.Or(os.Getenv("REDIS_URL"), "redis://127.0.0.1:6379"))
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := waitForRedis(ctx, rdb); err != nil {
		return err
	}
	// The worker's ID is the resource's service.instance.id: one name in
	// Redis, in the logs and on the spans.
	cfg := config{rounds: *rounds, interval: *interval, step: *step, tp: p.TracerProvider, worker: p.InstanceID,
		log: logger, out: os.Stdout}
	if err := run(ctx, rdb, cfg); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// waitForRedis pings until Redis answers (it may still be starting).
func waitForRedis(ctx context.Context, rdb *redis.Client) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// run starts a two-worker runtime and runs the rounds.
func run(ctx context.Context, rdb redis.UniversalClient, cfg config) error {
	q, err := queue.New(rdb, queue.Config{Name: "example", TracerProvider: cfg.tp, Backoff: cfg.backoff})
	if err != nil {
		return err
	}
	ex := &example{q: q, cfg: cfg, started: make(chan string, 8), done: make(chan string, 8)}
	mux := handlers.NewMux()
	handlers.HandleJSON(mux, "report", ex.report)
	mux.HandleFunc("alert", ex.alert)
	mux.HandleFunc("sync", ex.sync)
	rt, err := runtime.New(q, mux, runtime.Config{WorkerID: cfg.worker, Concurrency: 2, GracePeriod: 5 * time.Second,
		TracerProvider: cfg.tp, Logger: cfg.log})
	if err != nil {
		return err
	}
	if err := rt.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx) // preempts what still runs: it checkpoints and is requeued
	}()
	for i := 1; cfg.rounds == 0 || i <= cfg.rounds; i++ {
		if err := ex.round(ctx, i); err != nil {
			return err
		}
		if cfg.rounds != 0 && i == cfg.rounds {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.interval):
		}
	}
	return nil
}

type example struct {
	q       *queue.Client
	cfg     config
	started chan string // a report started its first run
	done    chan string // a task finished for good
	mu      sync.Mutex
}

func (ex *example) printf(format string, a ...any) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	fmt.Fprintf(ex.cfg.out, format+"\n", a...)
}

// round enqueues two reports and a sync task, then, once both workers run
// a report, an urgent alert; it returns when all four are done. Its span is
// the parent of the four enqueue spans, so the round is one trace.
func (ex *example) round(ctx context.Context, n int) error {
	ctx, span := ex.cfg.tp.Tracer("examples/jaeger").Start(ctx, fmt.Sprintf("round %d", n))
	defer span.End()
	ex.printf("round %d: trace %s", n, span.SpanContext().TraceID())
	steps, ms := 8, int(ex.cfg.step.Milliseconds())
	for _, name := range []string{"A", "B"} {
		t, err := handlers.NewJSONTask("report", ReportArgs{Name: name, Steps: steps, StepMs: ms})
		if err != nil {
			return err
		}
		if _, err := ex.q.Enqueue(ctx, t, queue.LevelNamed("low")); err != nil {
			return err
		}
	}
	if _, err := ex.q.Enqueue(ctx, queue.NewTask("sync", nil), queue.LevelNamed("low")); err != nil {
		return err
	}
	for range 2 {
		if err := wait(ctx, ex.started); err != nil {
			return err
		}
	}
	time.Sleep(2 * ex.cfg.step) // let the reports save a checkpoint or two
	if _, err := ex.q.Enqueue(ctx, queue.NewTask("alert", nil), queue.LevelNamed("high")); err != nil {
		return err
	}
	for range 4 {
		if err := wait(ctx, ex.done); err != nil {
			return err
		}
	}
	return nil
}

func wait(ctx context.Context, ch <-chan string) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// report works through its steps, saving a checkpoint after each. When the
// runtime preempts it (or shuts down) its context is cancelled: it saves
// where it is and returns, and it is requeued at the head of its level.
func (ex *example) report(ctx context.Context, t *queue.TaskInfo, a ReportArgs) error {
	p, resumed, err := checkpoint.Load[Progress](ctx)
	if err != nil {
		return err
	}
	if resumed {
		ex.printf("  report %s resumed at step %d/%d", a.Name, p.Done, a.Steps)
	} else {
		ex.started <- a.Name
	}
	for p.Done < a.Steps {
		select {
		case <-ctx.Done():
			if err := checkpoint.Save(ctx, p); err != nil {
				return err
			}
			ex.printf("  report %s stopped at step %d/%d: %v", a.Name, p.Done, a.Steps, context.Cause(ctx))
			return context.Cause(ctx)
		case <-time.After(time.Duration(a.StepMs) * time.Millisecond):
		}
		p.Done++
		if err := checkpoint.Save(ctx, p); err != nil {
			return err
		}
	}
	ex.printf("  report %s done", a.Name)
	ex.done <- "report"
	return nil
}

// alert is the urgent task: short, and it preempts a report.
func (ex *example) alert(ctx context.Context, t *queue.TaskInfo) error {
	time.Sleep(2 * ex.cfg.step)
	ex.printf("  alert done")
	ex.done <- "alert"
	return nil
}

// sync fails on its first attempt; the retry succeeds.
func (ex *example) sync(ctx context.Context, t *queue.TaskInfo) error {
	if t.Attempt == 0 {
		ex.printf("  sync failed; it will be retried")
		return errors.New("upstream timed out")
	}
	ex.printf("  sync done on attempt %d", t.Attempt+1)
	ex.done <- "sync"
	return nil
}
