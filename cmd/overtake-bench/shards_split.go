package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/overtake/overtake/queue"
)

// A split run ("3q" in --shards) is what a user does today when one
// queue outgrows a master: n separate queues of one shard, each on its own
// master (names searched for that), with no common priority order. Each
// gets its share of every phase's tasks (EnqueueBatch, single Enqueue from
// the same goroutines, a drain by n runtimes that share the Concurrency).
// Its busiest master's CPU per task over K = 1's sits beside K shards':
// on this machine the masters, producers and workers share the cores, and
// Redis spends more per command while they do, so neither can reach 1/n.

// splitOf reads a split token of --shards ("3q": 3 queues) as -3.
func splitOf(f string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSuffix(f, "q"))
	if !strings.HasSuffix(f, "q") || err != nil || n < 2 {
		return 0, false
	}
	return -n, true
}

// splitName returns a queue name of one shard whose hash tag lands on
// master m.
func (s *shardBench) splitName(n, i, m int) string {
	name := fmt.Sprintf("split%d-%d", n, i)
	for j := range maxPlaceTries {
		cand := name + "-" + strconv.Itoa(j)
		if s.placement(cand, 1)[m] == 1 {
			return cand
		}
	}
	return name
}

// runSplit measures n queues of one shard, n = -r.K, each task of a phase
// going to queue i mod n.
func (s *shardBench) runSplit(ctx context.Context, r *shardRun, tasks int) (*shardRun, error) {
	n := -r.K
	prod := s.c.newClient(s.c.masters)
	defer prod.Close()
	qs := make([]*queue.Client, n)
	cfgs := make([]queue.Config, n)
	r.Tags = make([]int, len(s.c.masters))
	for i := range qs {
		cfgs[i] = queue.Config{Namespace: s.ns, Name: s.splitName(n, i, i%len(s.c.masters))}
		q, err := queue.New(prod, cfgs[i])
		if err != nil {
			return nil, err
		}
		qs[i] = q
		r.Queue = strings.TrimPrefix(r.Queue+","+cfgs[i].Name, ",")
	}
	fill := &bench{opts: s.o}
	progress("shards %d queues: EnqueueBatch of %d tasks", n, tasks)
	if err := s.measure(ctx, r, phaseBatch, tasks, func() error {
		return eachQueue(qs, func(i int, q *queue.Client) error { return fill.fill(ctx, q, share(tasks, n, i)) })
	}); err != nil {
		return nil, err
	}
	for _, cfg := range cfgs {
		tags, err := s.c.tags(ctx, s.ns, cfg.Name)
		if err != nil {
			return nil, err
		}
		for m, t := range tags {
			r.Tags[m] += t
		}
	}
	r.Planned = r.Tags
	progress("shards %d queues: single Enqueue of %d tasks from %d goroutines", n, tasks, s.o.concurrency)
	if err := s.measure(ctx, r, phaseEnqueue, tasks, func() error { return enqueueEach(ctx, qs, tasks, s.o.concurrency) }); err != nil {
		return nil, err
	}
	progress("shards %d queues: drain of %d tasks, Concurrency %d in all", n, 2*tasks, s.o.concurrency)
	return r, s.drain(ctx, r, cfgs, qs, 2*tasks)
}

// share is queue i's part of n things over k queues.
func share(n, k, i int) int {
	if i < n%k {
		return n/k + 1
	}
	return n / k
}

// eachQueue runs fn for every queue at once and joins their errors.
func eachQueue(qs []*queue.Client, fn func(i int, q *queue.Client) error) error {
	errs := make([]error, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Go(func() { errs[i] = fn(i, q) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
