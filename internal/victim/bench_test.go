package victim_test

import (
	"github.com/overtake/overtake/internal/victim"

	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/preempt"
)

func benchRunning() []victim.Candidate {
	running := make([]victim.Candidate, 64)
	for i := range running {
		running[i] = victim.Candidate{
			ID:          fmt.Sprintf("task-%02d", i),
			Level:       i % 4,
			StartedAt:   t0.Add(-time.Duration(i%7) * time.Minute),
			Preemptions: i % 5,
			Preemptible: i%9 != 0,
		}
		if i%3 == 0 {
			running[i].LastCheckpoint = t0.Add(-time.Duration(i%11) * time.Second)
		}
	}
	return running
}

func BenchmarkChoose64(b *testing.B) {
	p := preempt.Policy{MinRunTime: time.Second, NeverPreempted: []int{7}, NeverPreempt: []int{9}}
	running := benchRunning()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := vp(p).Choose(running, 5, t0); !ok {
			b.Fatal("no victim")
		}
	}
}

func TestChooseDoesNotAllocate(t *testing.T) {
	p := preempt.Policy{MinRunTime: time.Second, NeverPreempted: []int{7}, NeverPreempt: []int{9}}
	running := benchRunning()
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = vp(p).Choose(running, 5, t0) }))
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = vp(p).LowestEligibleLevel(running, t0) }))
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = vp(p).Victim(running, t0) }))
}
