package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The machine's share (calibration). A run of K = 1 keeps one master
// busy; K = 3 keeps three busy at once. Where the masters and this process
// share fewer cores than they number, the masters take turns on them and
// evict each other's caches, so the same call costs a master more CPU
// time when the others are busy too, whatever the queue does; and on a
// virtual machine whose host is shared, the same call alone costs more in
// some spells than in others. calibrate measures both on each round with
// one fixed call that touches no key (calibScript): each master's CPU
// time per call alone, the others idle, then with every master called at
// once. The calibration row gives the factor (together over alone) and
// how far the same call alone ranged; the ratio row repeats both, so a
// reader sees whether this machine can resolve the ratio's target. On a
// machine with a core per master and one for the worker, not shared, the
// factor is near 1 and the range narrow.

// calibScript is the calibration's call: Lua work like the queue's
// scripts' (a table of strings built and counted), on no key, so any
// master runs it.
var calibScript = redis.NewScript(`local t = {} for i = 1, 300 do t[i] = tostring(i) .. ARGV[1] end return #t`)

// calibCalls is the calls each master runs in each step of a calibration,
// from calibClients goroutines at once.
const (
	calibCalls   = 3000
	calibClients = 4
)

// calibration is one round's: each master's Redis CPU time per
// calibScript call alone and with every master called at once.
type calibration struct {
	Alone    []time.Duration `json:"alone_ns"`
	Together []time.Duration `json:"together_ns"`
}

// factor is the median master's CPU per call together over the median
// master's alone: 0 when either is missing.
func (c calibration) factor() float64 {
	alone, together := medianDur(c.Alone), medianDur(c.Together)
	if alone <= 0 || together <= 0 {
		return 0
	}
	return float64(together) / float64(alone)
}

// medianDur is the median of v (0 for none).
func medianDur(v []time.Duration) time.Duration {
	return time.Duration(median(v, func(d time.Duration) float64 { return float64(d) }))
}

// calibrate runs calibScript on each master alone in turn, then on every
// master at once, and returns each master's CPU time per call of both.
func (s *shardBench) calibrate(ctx context.Context) (calibration, error) {
	n := len(s.c.nodes)
	c := calibration{Alone: make([]time.Duration, n)}
	for m := range n {
		per, err := s.calibStep(ctx, []int{m})
		if err != nil {
			return c, err
		}
		c.Alone[m] = per[m]
	}
	all := make([]int, n)
	for m := range all {
		all[m] = m
	}
	per, err := s.calibStep(ctx, all)
	c.Together = per
	return c, err
}

// calibStep runs calibCalls calls of calibScript on each master of ms at
// once and returns every master's CPU time per call (0 for those not in
// ms).
func (s *shardBench) calibStep(ctx context.Context, ms []int) ([]time.Duration, error) {
	before, err := s.c.stats(ctx)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(ms)*calibClients)
	var wg sync.WaitGroup
	for i, m := range ms {
		node := s.c.nodes[m]
		for g := range calibClients {
			wg.Go(func() {
				for range share(calibCalls, calibClients, g) {
					if err := calibScript.Run(ctx, node, nil, "calibrate").Err(); err != nil {
						errs[i*calibClients+g] = fmt.Errorf("calibration on %s: %w", s.c.masters[m], err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	after, err := s.c.stats(ctx)
	if err != nil {
		return nil, err
	}
	per := make([]time.Duration, len(after))
	for _, m := range ms {
		per[m] = (after[m].cpu - before[m].cpu) / calibCalls
	}
	return per, nil
}

// calibRow adds the calibration's row: the median round's factor, the
// range of the call alone, and every round's calls alone and together.
func (res *shardResult) calibRow(t *table) {
	if len(res.Calib) == 0 {
		return
	}
	factors := make([]float64, len(res.Calib))
	rounds := make([]string, len(res.Calib))
	for i, c := range res.Calib {
		factors[i] = c.factor()
		rounds[i] = fmt.Sprintf("%s µs alone, %s together", usList(c.Alone), usList(c.Together))
	}
	lo, hi := res.aloneRange()
	t.add(row{id: shardFigure, value: num(res.calibFactor()), unit: "×", target: "—",
		figure: fmt.Sprintf("this machine: a master's Redis CPU per call with all %d masters busy at once over alone (the same Lua call on no key)", len(res.Masters)),
		note: fmt.Sprintf("info: the call alone ranged %s–%s µs (max/min %s) over the masters and rounds; %d calls a master a step from %d clients; per master, each round: %s; each round's factor: %s. On a core per master (and one for the worker), not shared, the factor is near 1 and the range narrow",
			num(us(lo)), num(us(hi)), num(float64(hi)/float64(lo)), calibCalls, calibClients, strings.Join(rounds, "; "), runs(factors))})
}

// calibFactor is the median of the rounds' factors (0 without any).
func (res *shardResult) calibFactor() float64 {
	return median(res.Calib, func(c calibration) float64 { return c.factor() })
}

// aloneRange is the least and the most CPU per call of any master alone
// in any round (0, 0 without any).
func (res *shardResult) aloneRange() (lo, hi time.Duration) {
	for _, c := range res.Calib {
		for _, d := range c.Alone {
			if d > 0 && (lo == 0 || d < lo) {
				lo = d
			}
			hi = max(hi, d)
		}
	}
	return lo, hi
}

// usList writes durations in µs, "/"-separated.
func usList(v []time.Duration) string {
	parts := make([]string, len(v))
	for i, d := range v {
		parts[i] = num(us(d))
	}
	return strings.Join(parts, "/")
}

// machineNote is the ratio row's pointer to the calibration: its factor
// and how far the call alone ranged ("" without a calibration). The
// verdict stays on the measured ratio.
func (res *shardResult) machineNote() string {
	f := res.calibFactor()
	lo, hi := res.aloneRange()
	if f <= 0 || lo <= 0 {
		return ""
	}
	return fmt.Sprintf("; this machine (the calibration row): the same call %s× dearer with every master busy, and alone it ranged max/min %s",
		num(f), num(float64(hi)/float64(lo)))
}
