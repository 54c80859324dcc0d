package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/testredis/sentinelproc"
)

// sentinelPrefix starts a worker's address argument that names sentinels:
// "sentinel:host:port,host:port,...".
const sentinelPrefix = "sentinel:"

// foReport is what the failover scenario found.
type foReport struct {
	enqueued, unconfirmed          int
	lostConfirmed, lostUnconfirmed []string
	done, dead, pending            int64
	dups, breaches                 map[string]string
	kills                          []time.Time     // when the primary was killed
	details                        []string        // breach details from the ledger
	promotions, firstStarts        []time.Duration // per kill
	urgent                         []float64       // urgent start latency, ms
	faults                         []string
	workers                        int
	took                           time.Duration
	failback                       *fbReport // nil when the fail-back case did not run
}

// breached reports whether the failover broke an invariant: a task whose
// Enqueue a replica confirmed was lost, a task ran twice at once or went
// back in its checkpoints, or one was dead-lettered or left behind.
func (r *foReport) breached() bool {
	return len(r.lostConfirmed) > 0 || len(r.breaches) > 0 || r.dead > 0 || r.pending > 0 ||
		(r.failback != nil && r.failback.breached())
}

// runFailover is the failover scenario: a primary (AOF everysec), one
// replica and three sentinels; o.foWorkers worker processes and the
// producer on go-redis failover clients; o.foTasks tasks at o.rate; the
// primary SIGKILLed halfway through the feed (every o.foEvery instead, when
// set), the old primary rejoining as a replica after each promotion; then
// o.failbacks fail-backs (runFailbacks).
func runFailover(ctx context.Context, o options, self, logs string) (*foReport, error) {
	start := time.Now()
	g, err := sentinelproc.Start(ctx, sentinelproc.Options{Bin: o.redisServer, Lifetime: o.timeout + time.Minute})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	fl := &fleet{bin: self, addr: sentinelPrefix + strings.Join(g.SentinelAddrs(), ","), logDir: logs, tag: "f"}
	for i := range o.foWorkers {
		if err := fl.start(i); err != nil {
			return nil, err
		}
	}
	defer fl.stopAll()
	fo := g.FailoverOptions()
	fo.MaxRetries, fo.DialTimeout, fo.ReadTimeout, fo.WriteTimeout = 1, time.Second, 2*time.Second, 2*time.Second
	pr := newProducerOn(redis.NewFailoverClient(fo), true) // WaitReplicas 1
	defer pr.close()
	rep := &foReport{workers: o.foWorkers}

	every := o.foEvery
	if every <= 0 {
		every = time.Duration(float64(o.foTasks) / 2 / o.rate * float64(time.Second))
	}
	fctx, stopKills := context.WithCancel(ctx)
	kills := make(chan error, 1)
	go func() { kills <- killPrimaries(fctx, g, every, o.foEvery > 0, rep) }()
	err = pr.feed(ctx, "failover", o.foTasks, o.rate, o.urgentEvery)
	stopKills()
	if kerr := <-kills; err == nil {
		err = kerr
	}
	if err != nil {
		return rep, err
	}
	err = rep.wait(ctx, pr)
	rep.collect(ctx, pr, time.Since(start))
	if err == nil && o.failbacks > 0 {
		rep.failback, err = runFailbacks(ctx, o.failbacks, g, self, logs)
	}
	return rep, err
}

// killPrimaries SIGKILLs the primary after every, and again every every
// when repeat is set, until ctx ends: each time it waits for the promotion
// and lets the old primary rejoin as a replica.
func killPrimaries(ctx context.Context, g *sentinelproc.Group, every time.Duration, repeat bool, rep *foReport) error {
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
		old, killed, err := g.KillPrimary(ctx)
		if err != nil {
			return fmt.Errorf("failover: kill the primary: %w", err)
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		primary, promoted, err := g.WaitFailover(wctx, old)
		if err == nil {
			err = g.Rejoin(wctx, old)
		}
		if err == nil {
			err = g.WaitReplicas(wctx, 1)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("failover: %w", err)
		}
		rep.promotions = append(rep.promotions, promoted.Sub(killed))
		rep.faults = append(rep.faults, fmt.Sprintf("%5.1fs  SIGKILL primary %s; %s promoted %.2f s later; %s rejoined as a replica",
			killed.Sub(start).Seconds(), old, primary, promoted.Sub(killed).Seconds(), old))
		rep.kills = append(rep.kills, killed)
		if !repeat {
			return nil
		}
	}
}
