package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rounds (--shard-rounds): every K of --shards runs once a round, in
// turn, on the same queues (each drained by its round, so every round
// starts empty and each K's shards stay on the same masters), so that a
// slow spell of this shared machine falls on every K alike rather than on
// one. The table gives, per master and phase, the median over the rounds
// (medianRun); the ratio row also lists each round's own ratio, K and
// K = 1 of the same round (roundRatios). One round of K = 1 and K = 3
// moved the ratio by up to a third from one run to the next (0.368 to
// 0.502 on one build, 2026-12-07).

// medianRun merges the rounds of one K: each master's CPU time and
// commands of each phase, each phase's elapsed time and calls, are the
// medians of the rounds'; the call kinds are the median round's. A round
// that failed or that this build cannot run stands for all of them.
func medianRun(rounds []*shardRun) *shardRun {
	for _, r := range rounds {
		if r.Err != "" || r.Unsupported != "" {
			return r
		}
	}
	if len(rounds) == 1 {
		return rounds[0]
	}
	out := *rounds[0]
	for p := range phases {
		ph := out.Phases[p]
		ph.Elapsed = time.Duration(median(rounds, func(r *shardRun) float64 { return float64(r.Phases[p].Elapsed) }))
		ph.Calls = int64(median(rounds, func(r *shardRun) float64 { return float64(r.Phases[p].Calls) }))
		byCalls := slices.Clone(rounds)
		slices.SortStableFunc(byCalls, func(a, b *shardRun) int { return int(a.Phases[p].Calls - b.Phases[p].Calls) })
		ph.Kinds = byCalls[(len(byCalls)-1)/2].Phases[p].Kinds
		ph.CPU = make([]time.Duration, len(ph.CPU))
		ph.Cmds = make([]int64, len(ph.Cmds))
		for m := range ph.CPU {
			ph.CPU[m] = time.Duration(median(rounds, func(r *shardRun) float64 { return float64(r.Phases[p].CPU[m]) }))
			ph.Cmds[m] = int64(median(rounds, func(r *shardRun) float64 { return float64(r.Phases[p].Cmds[m]) }))
		}
		out.Phases[p] = ph
	}
	return &out
}

// roundRatios lists, for each round, the busiest master's Redis CPU per
// task (single Enqueue + drain) of run i over run base's: "" unless there
// were several rounds and both ran in every one.
func (res *shardResult) roundRatios(i, base int) string {
	if len(res.Each) <= max(i, base) || len(res.Each[i]) < 2 {
		return ""
	}
	parts := make([]string, 0, len(res.Each[i]))
	for j, r := range res.Each[i] {
		b := res.Each[base][j]
		if r.Err != "" || r.Unsupported != "" || b.Err != "" || b.Unsupported != "" {
			return ""
		}
		_, most := r.busiest(phaseEnqueue)
		_, one := b.busiest(phaseEnqueue)
		parts = append(parts, num(float64(most)/float64(one)))
	}
	return fmt.Sprintf("; each round's own (%d): %s", len(parts), strings.Join(parts, ", "))
}
