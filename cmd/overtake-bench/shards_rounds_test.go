package main

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeRun is a run of k shards on 3 masters whose every phase cost
// master m cpu[m] ms over 1000 tasks and ran cmds commands.
func fakeRun(k int, cpu [3]int, cmds int64, calls int64) *shardRun {
	r := &shardRun{K: k, Tags: []int{1, 1, 1}, Planned: []int{1, 1, 1}}
	for p := range phases {
		ph := shardPhase{Tasks: 1000, Elapsed: time.Duration(cpu[0]) * time.Second, Calls: calls, Kinds: fmt.Sprint("calls ", calls)}
		for m := range 3 {
			ph.CPU = append(ph.CPU, time.Duration(cpu[m])*time.Millisecond)
			ph.Cmds = append(ph.Cmds, cmds)
		}
		r.Phases[p] = ph
	}
	return r
}

// TestMedianRun takes each master's median over the rounds, on its own
// (not the median round's), the mean of the two middle values of an even
// count, and lets a failed round stand for the K.
func TestMedianRun(t *testing.T) {
	rounds := []*shardRun{fakeRun(3, [3]int{10, 50, 7}, 5, 9), fakeRun(3, [3]int{30, 20, 8}, 1, 3), fakeRun(3, [3]int{20, 40, 90}, 3, 6)}
	m := medianRun(rounds)
	for p := range phases {
		ph := m.Phases[p]
		assert.Equal(t, []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 8 * time.Millisecond}, ph.CPU)
		assert.Equal(t, []int64{3, 3, 3}, ph.Cmds)
		assert.Equal(t, 20*time.Second, ph.Elapsed)
		assert.Equal(t, int64(6), ph.Calls)
		assert.Equal(t, "calls 6", ph.Kinds, "the kinds of the round of median calls")
	}
	assert.Equal(t, 10*time.Millisecond, rounds[0].Phases[0].CPU[0], "the rounds are left as they were")

	two := medianRun(rounds[:2])
	assert.Equal(t, 20*time.Millisecond, two.Phases[phaseDrain].CPU[0])
	assert.Equal(t, 35*time.Millisecond, two.Phases[phaseDrain].CPU[1])

	failed := &shardRun{K: 3, Err: "boom"}
	assert.Same(t, failed, medianRun([]*shardRun{rounds[0], failed}))
	assert.Same(t, rounds[1], medianRun(rounds[1:2]))
}

// TestShardRoundsRows: the ratio row gives the medians' ratio and each
// round's own, K = 3 over the K = 1 of the same round.
func TestShardRoundsRows(t *testing.T) {
	res := &shardResult{Masters: []string{"a", "b", "c"}, Slots: []string{"0", "1", "2"}, Placement: placeBalanced,
		Each: [][]*shardRun{
			{fakeRun(1, [3]int{100, 1, 1}, 9, 9), fakeRun(1, [3]int{200, 1, 1}, 9, 9)},
			{fakeRun(3, [3]int{40, 30, 30}, 3, 9), fakeRun(3, [3]int{30, 90, 30}, 3, 9)},
		}}
	for _, rs := range res.Each {
		res.Runs = append(res.Runs, medianRun(rs))
	}
	tb := &table{}
	res.rows(tb)
	var out bytes.Buffer
	tb.write(&out)
	// Medians: K=1's master a 150 ms, K=3's busiest b 60 ms: 0.4. Round 1:
	// 40/100; round 2: 90/200.
	require.Contains(t, out.String(), "| shards K=3 / K=1: the busiest master's Redis CPU per task, single Enqueue + drain | 0.400 | fraction | <= 0.4 | pass:")
	assert.Contains(t, out.String(), "; each round's own (2): 0.400, 0.450 |")
}
