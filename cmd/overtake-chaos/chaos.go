package main

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/overtake/overtake/internal/redisproc"
)

// chaos injects the faults until ctx ends and returns what it did: a worker
// SIGKILLed (and restarted) every killEvery; once (every o.cycle when set),
// a worker SIGSTOPped past its lease and resumed, Redis SIGKILLed and
// restarted from its AOF, and the network to Redis cut for o.cut.
func chaos(ctx context.Context, o options, fl *fleet, rs *redisproc.Server, px *proxy) []string {
	var log []string
	var mu sync.Mutex
	note := func(start time.Time, format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, fmt.Sprintf("%5.1fs  ", time.Since(start).Seconds())+fmt.Sprintf(format, a...))
	}
	start := time.Now()
	kill := time.NewTicker(o.killEvery)
	defer kill.Stop()
	stopAt, cutAt, redisAt := 3*time.Second, 10*time.Second, 25*time.Second
	stopped, redisDone, cutDone := false, false, false
	paused := false // worker 0 is SIGSTOPped now
	cycleStart := start
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var resume <-chan time.Time // the end of worker 0's pause
	for {
		select {
		case <-ctx.Done():
			if paused {
				fl.signal(0, syscall.SIGCONT)
			}
			mu.Lock()
			defer mu.Unlock()
			return log
		case <-kill.C:
			i := fl.killRandom(0)
			note(start, "SIGKILL worker %d, restarted after 1 s", i)
		case <-resume:
			fl.signal(0, syscall.SIGCONT)
			paused, resume = false, nil
		case <-tick.C:
			if o.cycle > 0 && time.Since(cycleStart) >= o.cycle {
				cycleStart = cycleStart.Add(o.cycle)
				stopped, redisDone, cutDone = false, false, false
			}
			el := time.Since(cycleStart)
			switch {
			case !stopped && el >= stopAt:
				fl.signal(0, syscall.SIGSTOP)
				stopped, paused = true, true
				note(start, "SIGSTOP worker 0 for 5 s (its lease is 3 s)")
				resume = time.After(5 * time.Second) // the pause itself
			case !redisDone && el >= redisAt:
				if err := rs.Kill(); err != nil {
					note(start, "SIGKILL redis-server FAILED: %v", err)
				} else {
					note(start, "SIGKILL redis-server")
				}
				if err := rs.Restart(); err != nil {
					note(start, "redis-server restart FAILED: %v", err)
				} else {
					note(start, "redis-server restarted from its AOF")
				}
				redisDone = true
			case !cutDone && el >= cutAt:
				px.cut(o.cut)
				note(start, "network to Redis cut for %v", o.cut)
				cutDone = true
			}
		}
	}
}
