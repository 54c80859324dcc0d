package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis/sentinelproc"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// The fail-back case's worker process: its ID starts with fbTag, it runs
// the queue fbNamespace with the default settings but 4 slots (a poll
// every 10 s, so that a lost wake-up shows as seconds), and its handler
// records each probe's start latency in kFbLat.
const (
	fbTag       = "fb"
	fbNamespace = "chaos-fb"
	fbType      = "fbprobe"
	kFbLat      = "chaos:fb:lat" // LIST of fail-back probes' start latency (µs)
)

// fbProbes is how many probes each fail-back enqueues, fbPace how often,
// from 1 s after the final primary answers; fbBound the start latency
// that is a breach: a wake-up subscription left on the demoted primary
// makes tasks wait for the 10 s poll.
const (
	fbProbes = 20
	fbPace   = 50 * time.Millisecond
	fbBound  = time.Second
)

// fbReport is what the fail-back case found.
type fbReport struct {
	rounds     int
	latency    []float64 // ms, sorted
	notStarted int
	faults     []string
}

// breached reports whether a probe started late or not at all.
func (r *fbReport) breached() bool {
	return r.notStarted > 0 || (len(r.latency) > 0 && r.latency[len(r.latency)-1] >= float64(fbBound.Milliseconds()))
}

// newFbRuntime is the fail-back case's worker: rdb's queue fbNamespace,
// whose probes push their start latency to kFbLat.
func newFbRuntime(rdb *redis.Client, id string, log *zap.Logger) (*runtime.Runtime, error) {
	q, err := queue.New(rdb, queue.Config{Namespace: fbNamespace})
	if err != nil {
		return nil, err
	}
	mux := handlers.NewMux()
	mux.HandleFunc(fbType, func(ctx context.Context, t *queue.TaskInfo) error {
		var j job
		if err := json.Unmarshal(t.Payload, &j); err != nil {
			return handlers.SkipRetry(err)
		}
		if t.Attempt == 0 && t.Recoveries == 0 {
			return rdb.RPush(context.WithoutCancel(ctx), kFbLat, time.Since(time.Unix(0, j.U)).Microseconds()).Err()
		}
		return nil
	})
	return runtime.New(q, mux, runtime.Config{Concurrency: 4, WorkerID: id, Logger: log})
}

// runFailbacks is the fail-back case, once the failover scenario's queue
// is empty: n times, the primary is SIGKILLed, its replica promoted, the
// old primary rejoins as a replica and is promoted again (SENTINEL
// FAILOVER) 2 s after the first promotion, while the demoted primary
// lives on, a primary still, for some 10 s. From 1 s after the final
// primary answers, fbProbes tasks are enqueued directly on it, for an
// idle worker process of its own on a failover client.
func runFailbacks(ctx context.Context, n int, g *sentinelproc.Group, self, logs string) (*fbReport, error) {
	fl := &fleet{bin: self, addr: sentinelPrefix + strings.Join(g.SentinelAddrs(), ","), logDir: logs, tag: fbTag}
	if err := fl.start(0); err != nil {
		return nil, err
	}
	defer fl.stopAll()
	rep := &fbReport{}
	start := time.Now()
	for round := range n {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := rep.round(wctx, g, round, start)
		cancel()
		if err != nil {
			return rep, fmt.Errorf("fail-back %d: %w", round, err)
		}
	}
	sort.Float64s(rep.latency)
	return rep, nil
}

// round makes one fail-back and enqueues its probes.
func (r *fbReport) round(ctx context.Context, g *sentinelproc.Group, round int, start time.Time) error {
	if err := g.WaitReplicas(ctx, 1); err != nil { // the last round's demoted primary in sync
		return err
	}
	first, err := g.Primary(ctx)
	if err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: first})
	q, err := queue.New(c, queue.Config{Namespace: fbNamespace})
	if err == nil {
		err = waitSubscribed(ctx, c, store.Of(q).WakeChannel())
	}
	_ = c.Close()
	if err != nil {
		return err
	}
	_, killed, err := g.KillPrimary(ctx)
	if err != nil {
		return err
	}
	second, promoted, err := g.WaitFailover(ctx, first)
	if err == nil {
		err = g.Rejoin(ctx, first)
	}
	if err == nil {
		err = g.WaitReplicas(ctx, 1)
	}
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(promoted.Add(2 * time.Second))):
	}
	_, primary, _, err := g.Failover(ctx)
	if err != nil {
		return err
	}
	answered := time.Now()
	r.rounds++
	r.faults = append(r.faults, fmt.Sprintf("%5.1fs  SIGKILL primary %s; %s promoted %.2f s later; %s rejoined and "+
		"promoted again %.2f s after that", killed.Sub(start).Seconds(), first, second, promoted.Sub(killed).Seconds(),
		primary, answered.Sub(promoted).Seconds()))
	return r.probe(ctx, primary, round, answered)
}

// probe enqueues fbProbes probes on primary from 1 s after answered, waits
// for their starts and records their latency.
func (r *fbReport) probe(ctx context.Context, primary string, round int, answered time.Time) error {
	c := redis.NewClient(&redis.Options{Addr: primary})
	defer c.Close()
	q, err := queue.New(c, queue.Config{Namespace: fbNamespace})
	if err != nil {
		return err
	}
	if err := c.Del(ctx, kFbLat).Err(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(answered.Add(time.Second))):
	}
	for i := range fbProbes {
		body, _ := json.Marshal(job{U: time.Now().UnixNano()})
		if _, err := q.Enqueue(ctx, queue.NewTask(fbType, body), queue.ID(fmt.Sprintf("fb-%d-%d", round, i))); err != nil {
			return err
		}
		time.Sleep(fbPace) // the probes' pace
	}
	deadline := time.Now().Add(30 * time.Second) // three polls
	var n int64
	for n < fbProbes && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling the probes' ledger
		n, _ = c.LLen(ctx, kFbLat).Result()
	}
	r.notStarted += fbProbes - int(n)
	r.latency = append(r.latency, latencyList(ctx, c, kFbLat)...)
	return nil
}

// waitSubscribed waits until one client of c's server subscribes to
// channel: the fail-back case's worker, before the primary is killed.
func waitSubscribed(ctx context.Context, c *redis.Client, channel string) error {
	for {
		n, err := c.PubSubNumSub(ctx, channel).Result()
		if err == nil && n[channel] == 1 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no wake-up subscription on the primary: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling the primary
		}
	}
}

// table is the fail-back case's rows, under the failover scenario's.
func (r *fbReport) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nFail-back (the killed primary promoted again 2 s after its replica; an idle worker, "+
		"default settings: a 10 s poll):\n\n| check | result | breach? |\n|---|---|---|\n")
	mark := map[bool]string{true: "**BREACH**", false: "ok"}
	fmt.Fprintf(&b, "| fail-backs | %d | ok |\n", r.rounds)
	fmt.Fprintf(&b, "| probes not started within 30 s | %d | %s |\n", r.notStarted, mark[r.notStarted > 0])
	late := len(r.latency) > 0 && r.latency[len(r.latency)-1] >= float64(fbBound.Milliseconds())
	fmt.Fprintf(&b, "| probes enqueued 1 s after the final primary answered: n, p50, p99, max (breach: %v or more) "+
		"| %d, %.1f ms, %.1f ms, %.1f ms | %s |\n", fbBound, len(r.latency), pct(r.latency, 50), pct(r.latency, 99),
		pct(r.latency, 100), mark[late])
	fmt.Fprintf(&b, "\nFail-back faults:\n\n")
	for _, f := range r.faults {
		fmt.Fprintf(&b, "    %s\n", f)
	}
	return b.String()
}
