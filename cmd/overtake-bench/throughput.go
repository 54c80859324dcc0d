package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	otrt "github.com/overtake/overtake/runtime"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// bench holds what every figure shares: the Redis address, a namespace of
// its own, and a producer client that no hook counts.
type bench struct {
	addr string
	ns   string
	prod *redis.Client
	opts options
}

// pair is one queue seen by a producer (uncounted) and by a runtime whose
// Redis client carries the counting hook.
type pair struct {
	prod, rt *queue.Client
	hook     *counter
	client   *redis.Client
}

func (b *bench) pair(name string) (*pair, error) {
	cfg := queue.Config{Namespace: b.ns, Name: name, Shards: b.opts.queueShards}
	prod, err := queue.New(b.prod, cfg)
	if err != nil {
		return nil, err
	}
	c := newClient(b.addr, b.opts)
	h := newCounter()
	c.AddHook(h)
	rq, err := queue.New(c, cfg)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &pair{prod: prod, rt: rq, hook: h, client: c}, nil
}

func (p *pair) close() { _ = p.client.Close() }

// tputResult is one throughput run.
type tputResult struct {
	n        int
	enqueue  time.Duration // pre-enqueueing all n tasks
	elapsed  time.Duration // runtime start to last ack
	trips    snapshot      // the runtime client's round trips meanwhile
	stats    otrt.RunStats
	tasksPer float64
	cpu      time.Duration // this process's CPU time (user+sys) per task
	allocs   float64       // this process's heap allocations per task
	redisCPU time.Duration // redis-server's CPU time per task
}

// throughput pre-enqueues n no-op tasks over 3 levels with EnqueueBatch,
// then times a runtime from Start until every task is acked.
func (b *bench) throughput(ctx context.Context, name string, n int, cfg otrt.Config) (tputResult, error) {
	res := tputResult{n: n}
	p, err := b.pair(name)
	if err != nil {
		return res, err
	}
	defer p.close()
	t0 := time.Now()
	if err := b.fill(ctx, p.prod, n); err != nil {
		return res, err
	}
	res.enqueue = time.Since(t0)

	var started atomic.Int64
	all := make(chan struct{})
	var once sync.Once
	h := handlers.HandlerFunc(func(context.Context, *queue.TaskInfo) error {
		if started.Add(1) == int64(n) {
			once.Do(func() { close(all) })
		}
		return nil
	})
	cfg.Logger = zap.NewNop()
	rt, err := otrt.New(p.rt, h, cfg)
	if err != nil {
		return res, err
	}
	before := p.hook.snapshot()
	cpu0, rcpu0, allocs0 := processCPU(), b.redisCPU(ctx), heapAllocs()
	t0 = time.Now()
	if err := rt.Start(ctx); err != nil {
		return res, err
	}
	defer shutdown(rt)
	limit := time.After(b.opts.runLimit)
	select {
	case <-all:
	case <-limit:
		return res, fmt.Errorf("only %d of %d tasks started within %v", started.Load(), n, b.opts.runLimit)
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if err := waitDrained(ctx, p.prod, limit); err != nil {
		return res, err
	}
	res.elapsed = time.Since(t0)
	res.cpu = (processCPU() - cpu0) / time.Duration(n)
	res.allocs = float64(heapAllocs()-allocs0) / float64(n)
	if rcpu0 >= 0 {
		res.redisCPU = (b.redisCPU(ctx) - rcpu0) / time.Duration(n)
	}
	res.trips = p.hook.snapshot().sub(before)
	res.stats = rt.Stats()
	res.tasksPer = float64(n) / res.elapsed.Seconds()
	return res, nil
}

// fillers is how many goroutines pre-enqueue, each with its own batches.
const fillers = 4

// fill enqueues n no-op tasks, level i%3, with EnqueueBatch calls of
// opts.batch tasks: the first call alone, so that it loads the script,
// then from fillers goroutines. (EnqueueBatch re-runs a whole pipeline
// with EVAL when part of it got NOSCRIPT, so concurrent first calls would
// report tasks that were stored as duplicates.)
func (b *bench) fill(ctx context.Context, q *queue.Client, n int) error {
	batch := func(i int) error {
		tasks := make([]*queue.Task, 0, b.opts.batch)
		for j := i; j < min(i+b.opts.batch, n); j++ {
			tasks = append(tasks, queue.NewTask("noop", nil, queue.Level(j%3)))
		}
		_, err := q.EnqueueBatch(ctx, tasks)
		return err
	}
	if err := batch(0); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	next.Store(int64(b.opts.batch))
	for range fillers {
		wg.Go(func() {
			for {
				i := int(next.Add(int64(b.opts.batch))) - b.opts.batch
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := batch(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	return ctx.Err()
}

// waitDrained polls the queue's counters until nothing is pending, active
// or scheduled: the last ack has landed.
func waitDrained(ctx context.Context, q *queue.Client, limit <-chan time.Time) error {
	for {
		st, err := q.Stats(ctx)
		if err != nil {
			return err
		}
		var left int64
		for _, l := range st.Levels {
			left += l.Pending + l.Active + l.Scheduled
		}
		if left == 0 {
			return nil
		}
		select {
		case <-limit:
			return fmt.Errorf("%d tasks still pending or active at the time limit", left)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// processCPU returns the user plus system CPU time this process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapAllocs returns the heap objects this process allocated so far.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// redisCPU returns the CPU time redis-server used (INFO cpu), -1 if unknown.
func (b *bench) redisCPU(ctx context.Context) time.Duration {
	info, err := b.prod.InfoMap(ctx, "cpu").Result()
	if err != nil {
		return -1
	}
	var sum float64
	for _, k := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(info["CPU"][k], 64)
		if err != nil {
			return -1
		}
		sum += v
	}
	return time.Duration(sum * float64(time.Second))
}

// shutdown stops a runtime within a bound.
func shutdown(rt *otrt.Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil && !errors.Is(err, otrt.ErrNotStarted) {
		fmt.Fprintf(os.Stderr, "warning: runtime shutdown: %v\n", err)
	}
}
