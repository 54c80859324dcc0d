package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	otrt "github.com/overtake/overtake/runtime"
)

// The phases of one shard run, in the order they run.
const (
	phaseBatch   = iota // EnqueueBatch of --shard-tasks tasks
	phaseEnqueue        // single Enqueue of --shard-tasks tasks
	phaseDrain          // a runtime drains both: 2 × --shard-tasks
	phases
)

var phaseNames = [phases]string{"EnqueueBatch", "single Enqueue", "drain"}

// shardPhase is what one phase cost each master, and how fast it went.
type shardPhase struct {
	Tasks   int             `json:"tasks"`
	Elapsed time.Duration   `json:"elapsed_ns"`
	CPU     []time.Duration `json:"cpu_ns"`                 // each master's Redis CPU time, used_cpu_user+sys
	Cmds    []int64         `json:"commands"`               // each master's total_commands_processed
	Calls   int64           `json:"client_calls,omitempty"` // the worker's calls (drain only), a pipeline counting once
	Kinds   string          `json:"client_calls_per_task,omitempty"`
}

// shardRun is one queue of K shards on the cluster, enqueued then drained.
type shardRun struct {
	K           int                `json:"k"`
	Queue       string             `json:"queue"`
	Unsupported string             `json:"unsupported,omitempty"` // why this build cannot run K shards
	Err         string             `json:"error,omitempty"`       // why the run failed
	Tags        []int              `json:"hash_tags"`             // the queue's hash tags found on each master
	Planned     []int              `json:"planned_hash_tags"`     // where CRC16 of the tags puts them
	Phases      [phases]shardPhase `json:"phases"`
}

// cpuPerTask is master m's Redis CPU time per task of phase p.
func (r *shardRun) cpuPerTask(p, m int) time.Duration {
	ph := r.Phases[p]
	return ph.CPU[m] / time.Duration(ph.Tasks)
}

// cmdsPerTask is master m's commands per task of phase p.
func (r *shardRun) cmdsPerTask(p, m int) float64 {
	ph := r.Phases[p]
	return float64(ph.Cmds[m]) / float64(ph.Tasks)
}

// life is master m's Redis CPU time for one task's whole life: enqueued by
// phase enq (phaseEnqueue or phaseBatch), then drained.
func (r *shardRun) life(enq, m int) time.Duration {
	return r.cpuPerTask(enq, m) + r.cpuPerTask(phaseDrain, m)
}

// busiest is the master that spends the most CPU time on a task's life
// (enqueued by phase enq), and that time.
func (r *shardRun) busiest(enq int) (int, time.Duration) {
	best, most := 0, time.Duration(0)
	for m := range r.Phases[phaseDrain].CPU {
		if c := r.life(enq, m); c > most {
			best, most = m, c
		}
	}
	return best, most
}

// mostIn is the CPU time per task of phase p of the master that spends
// the most on it.
func (r *shardRun) mostIn(p int) time.Duration {
	var most time.Duration
	for m := range r.Phases[p].CPU {
		most = max(most, r.cpuPerTask(p, m))
	}
	return most
}

// shardBench runs the shard section: one queue per K on one cluster.
type shardBench struct {
	c  *shardCluster
	ns string
	o  options
}

// run measures a fresh queue of k shards with n tasks per enqueue phase.
func (s *shardBench) run(ctx context.Context, k, n int) (*shardRun, error) {
	r := &shardRun{K: k}
	if k < 0 {
		return s.runSplit(ctx, r, n)
	}
	r.Queue, r.Planned = s.queueName(k)
	prod := s.c.newClient(s.c.masters)
	defer prod.Close()
	cfg := queue.Config{Namespace: s.ns, Name: r.Queue, Shards: k}
	q, err := queue.New(prod, cfg)
	if err != nil {
		if k > 1 {
			r.Unsupported = "queue.New: " + err.Error()
			return r, nil
		}
		return nil, err
	}
	fill := &bench{opts: s.o}
	progress("shards K=%d: EnqueueBatch of %d tasks", k, n)
	if err := s.measure(ctx, r, phaseBatch, n, func() error { return fill.fill(ctx, q, n) }); err != nil {
		return nil, err
	}
	if r.Tags, err = s.c.tags(ctx, s.ns, r.Queue); err != nil {
		return nil, err
	}
	if total := sum(r.Tags); k > 1 && total == 1 {
		r.Unsupported = fmt.Sprintf("queue.New took Shards %d but every key of the queue has one hash tag", k)
		return r, nil
	}
	progress("shards K=%d: single Enqueue of %d tasks from %d goroutines", k, n, s.o.concurrency)
	if err := s.measure(ctx, r, phaseEnqueue, n, func() error { return enqueueEach(ctx, []*queue.Client{q}, n, s.o.concurrency) }); err != nil {
		return nil, err
	}
	progress("shards K=%d: drain of %d tasks, Concurrency %d", k, 2*n, s.o.concurrency)
	if err := s.drain(ctx, r, []queue.Config{cfg}, []*queue.Client{q}, 2*n); err != nil {
		return nil, err
	}
	return r, nil
}

// measure runs fn as phase p of r and records each master's deltas.
func (s *shardBench) measure(ctx context.Context, r *shardRun, p, n int, fn func() error) error {
	before, err := s.c.stats(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := fn(); err != nil {
		return fmt.Errorf("shards K=%d, %s: %w", r.K, phaseNames[p], err)
	}
	elapsed := time.Since(t0)
	after, err := s.c.stats(ctx)
	if err != nil {
		return err
	}
	ph := shardPhase{Tasks: n, Elapsed: elapsed}
	for m := range after {
		ph.CPU = append(ph.CPU, after[m].cpu-before[m].cpu)
		ph.Cmds = append(ph.Cmds, after[m].cmds-before[m].cmds)
	}
	r.Phases[p] = ph
	return nil
}

// drain runs one runtime per queue of cfgs (their Concurrency sharing
// --concurrency) on one cluster client of its own, from Start until every
// one of n tasks is acked (each queue drained as seen by prods), as phase
// phaseDrain; a hook counts the client's calls.
func (s *shardBench) drain(ctx context.Context, r *shardRun, cfgs []queue.Config, prods []*queue.Client, n int) error {
	wc := s.c.newClient(s.c.masters)
	defer wc.Close()
	hook := newCounter()
	wc.AddHook(hook)
	var started atomic.Int64
	all := make(chan struct{})
	h := handlers.HandlerFunc(func(context.Context, *queue.TaskInfo) error {
		if started.Add(1) == int64(n) {
			close(all)
		}
		return nil
	})
	rts := make([]*otrt.Runtime, len(cfgs))
	for i, cfg := range cfgs {
		wq, err := queue.New(wc, cfg)
		if err != nil {
			return err
		}
		conc := max(share(s.o.concurrency, len(cfgs), i), 1)
		if rts[i], err = otrt.New(wq, h, otrt.Config{Concurrency: conc, Logger: zap.NewNop()}); err != nil {
			return err
		}
		defer shutdown(rts[i])
	}
	calls0 := hook.snapshot()
	err := s.measure(ctx, r, phaseDrain, n, func() error {
		for _, rt := range rts {
			if err := rt.Start(ctx); err != nil {
				return err
			}
		}
		limit := time.After(s.o.runLimit)
		select {
		case <-all:
		case <-limit:
			return fmt.Errorf("only %d of %d tasks started within %v", started.Load(), n, s.o.runLimit)
		case <-ctx.Done():
			return ctx.Err()
		}
		return eachQueue(prods, func(_ int, q *queue.Client) error { return waitDrained(ctx, q, limit) })
	})
	calls := hook.snapshot().sub(calls0)
	r.Phases[phaseDrain].Calls, r.Phases[phaseDrain].Kinds = calls.trips, calls.perTask(n)
	return err
}

// enqueueEach enqueues n no-op tasks, level i%3, with single Enqueue calls
// from g goroutines, task i to queue i mod len(qs).
func enqueueEach(ctx context.Context, qs []*queue.Client, n, g int) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, g)
	)
	for w := range g {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n) && ctx.Err() == nil; i = next.Add(1) {
				if _, err := qs[i%int64(len(qs))].Enqueue(ctx, queue.NewTask("noop", nil), queue.Level(int(i%3))); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, ctx.Err())...)
}

// parseShards reads --shards, e.g. "1,3,6".
func parseShards(s string) ([]int, error) {
	var ks []int
	for _, f := range splitList(s) {
		if k, ok := splitOf(f); ok {
			ks = append(ks, k)
			continue
		}
		k, err := strconv.Atoi(f)
		if err != nil || k < 1 {
			return nil, fmt.Errorf("--shards %q: want positive counts, or <n>q for n separate queues, e.g. 1,3,6,3q", s)
		}
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return nil, errors.New("--shards: no shard count")
	}
	return ks, nil
}

func sum(v []int) int {
	t := 0
	for _, x := range v {
		t += x
	}
	return t
}
