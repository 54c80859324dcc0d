package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/queue"
)

// producer enqueues the workload straight to Redis (not through the proxy),
// with explicit IDs so that a retry after a lost reply cannot duplicate a
// task.
type producer struct {
	rdb      *redis.Client
	q        *queue.Client
	enqueued int
	// confirm: the queue has WaitReplicas 1, and unconfirmed records the
	// tasks that the replica did not confirm (ErrNotReplicated, or
	// ErrDuplicateTask after a failed attempt). ids are the tasks enqueued,
	// in order.
	confirm     bool
	ids         []string
	unconfirmed map[string]bool
}

func newProducer(addr string) *producer {
	return newProducerOn(redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 1}), false)
}

// newProducerOn returns a producer on rdb, which it closes; with confirm,
// its queue has WaitReplicas 1 (WaitTimeout 200 ms).
func newProducerOn(rdb *redis.Client, confirm bool) *producer {
	cfg := queueConfig()
	if confirm {
		cfg.WaitReplicas, cfg.WaitTimeout = 1, 200*time.Millisecond
	}
	q, err := queue.New(rdb, cfg)
	if err != nil {
		panic(err)
	}
	return &producer{rdb: rdb, q: q, confirm: confirm, unconfirmed: map[string]bool{}}
}

func (p *producer) close() { _ = p.rdb.Close() }

// feed enqueues n tasks at rate per second: one urgent task (level 2) in
// urgentEvery, the rest alternately long low tasks (level 0, 10 × 20 ms)
// and short normal ones (level 1, 4 × 10 ms).
func (p *producer) feed(ctx context.Context, phase string, n int, rate float64, urgentEvery int) error {
	start := time.Now()
	for i := 0; i < n; i++ {
		if d := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		j, level := job{Steps: 10, MS: 20}, 0
		switch {
		case i%urgentEvery == 0:
			j, level = job{Steps: 2, MS: 5, U: time.Now().UnixNano(), Phase: phase}, 2
		case i%2 == 1:
			j, level = job{Steps: 4, MS: 10}, 1
		}
		j.Starts = p.confirm
		body, _ := json.Marshal(j)
		id := fmt.Sprintf("%s-%d", phase, i)
		confirmed, err := p.enqueue(ctx, id, body, level)
		if err != nil {
			return err
		}
		p.enqueued++
		if p.confirm {
			p.ids = append(p.ids, id)
			if !confirmed {
				p.unconfirmed[id] = true
			}
		}
	}
	return nil
}

// enqueue retries through a Redis restart or failover for up to 30 s. It
// reports whether the task was confirmed: with WaitReplicas, a nil error on
// the first attempt that stored it.
func (p *producer) enqueue(ctx context.Context, id string, body []byte, level int) (confirmed bool, err error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := p.q.Enqueue(cctx, queue.NewTask("chaos", body), queue.ID(id), queue.Level(level), queue.MaxRetries(100))
		cancel()
		if err == nil || errors.Is(err, queue.ErrDuplicateTask) || errors.Is(err, queue.ErrNotReplicated) {
			return err == nil, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, fmt.Errorf("enqueue %s: %w", id, err)
		}
		time.Sleep(100 * time.Millisecond) // Redis restarting: retry shortly
	}
}

// waitDone waits until n tasks are in the ledger's done set, or are dead.
func (p *producer) waitDone(ctx context.Context, n int) error {
	for {
		done, _ := p.rdb.SCard(ctx, kDone).Result()
		dead := p.dead(ctx)
		if int(done)+int(dead) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d tasks, %d done, %d dead: %w", n, done, dead, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *producer) dead(ctx context.Context) int64 {
	st, err := p.q.Stats(ctx)
	if err != nil {
		return 0
	}
	var d int64
	for _, l := range st.Levels {
		d += l.Dead
	}
	return d
}
