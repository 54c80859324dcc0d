package main

import (
	"context"
	"sync"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/redis/go-redis/v9"
)

// TypeReport is the one task type: a report for a tenant.
const TypeReport = "report"

// queueConfig is the queue both the worker and producers use: two levels
// named after the classes, free tasks aging up after agingAfter.
func queueConfig(agingAfter time.Duration) queue.Config {
	return queue.Config{
		Name:       "reports",
		Levels:     2,
		LevelNames: []string{"free", "paying"},
		Classes:    map[string]int{"free": 0, "paying": 1},
		AgeAfter:   agingAfter,
	}
}

// runtimeConfig gives each band a pool of its own: paying work never
// takes the free pool's slot, nor preempts its task, however much of it
// waits. Paying tasks have an SLA of sla.
func runtimeConfig(paying, free int, sla time.Duration) runtime.Config {
	return runtime.Config{
		Pools: []runtime.Pool{
			{Name: "paying", Levels: []int{1}, Size: paying},
			{Name: "free", Levels: []int{0}, Size: free},
		},
		SLA: map[int]time.Duration{1: sla},
	}
}

// Reports counts the reports done per class and the most that ran at once.
type Reports struct {
	Work time.Duration // how long one report takes
	// Finished, if set, receives the class of each report done.
	Finished chan<- string

	mu      sync.Mutex
	done    map[string]int
	running map[string]int
	most    map[string]int
}

// Handle makes one report; the tenant's class is the task's class.
func (r *Reports) Handle(ctx context.Context, t *queue.TaskInfo) error {
	r.mu.Lock()
	if r.done == nil {
		r.done, r.running, r.most = map[string]int{}, map[string]int{}, map[string]int{}
	}
	r.running[t.Class]++
	r.most[t.Class] = max(r.most[t.Class], r.running[t.Class])
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running[t.Class]--
		r.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(r.Work):
	}
	r.mu.Lock()
	r.done[t.Class]++
	r.mu.Unlock()
	if r.Finished != nil {
		r.Finished <- t.Class
	}
	return nil
}

// Done returns how many reports of class are done and the most that ran
// at once.
func (r *Reports) Done(class string) (done, most int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done[class], r.most[class]
}

// newWorker builds the worker's runtime over rdb.
func newWorker(rdb redis.UniversalClient, reps *Reports, cfg runtime.Config, aging time.Duration) (*queue.Client, *runtime.Runtime, error) {
	q, err := queue.New(rdb, queueConfig(aging))
	if err != nil {
		return nil, nil, err
	}
	mux := handlers.NewMux()
	mux.HandleFunc(TypeReport, reps.Handle)
	rt, err := runtime.New(q, mux, cfg)
	return q, rt, err
}
