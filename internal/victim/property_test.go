package victim_test

import (
	"github.com/overtake/overtake/internal/victim"

	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/preempt"
)

// scenario builds a policy, a running set and an arrival from fuzz input.
// Values are coarse on purpose so that ties on level and work lost are
// frequent; IDs are unique.
func scenario(seed uint64, n uint8, arriving int8, minRun int8, maxPre int8, gap int8, flags uint16) (preempt.Policy, []victim.Candidate, int) {
	rng := rand.New(rand.NewPCG(seed, uint64(flags)))
	p := preempt.Policy{
		MinRunTime:     time.Duration(minRun) * time.Second,
		MaxPreemptions: int(maxPre),
		MinLevelGap:    int(gap) % 4,
		Disabled:       flags&1 != 0 && flags&2 != 0,
	}
	for l := range 7 {
		if flags&(1<<(l+2)) != 0 && l%2 == 0 {
			p.NeverPreempt = append(p.NeverPreempt, l)
		}
		if flags&(1<<(l+2)) != 0 && l%2 == 1 {
			p.NeverPreempted = append(p.NeverPreempted, l)
		}
	}
	running := make([]victim.Candidate, int(n)%65)
	for i := range running {
		c := victim.Candidate{
			ID:          fmt.Sprintf("t%03d", rng.IntN(1000)*100+i),
			Level:       rng.IntN(8),
			StartedAt:   t0.Add(-time.Duration(rng.IntN(14)-2) * 10 * time.Second),
			Preemptions: rng.IntN(6),
			Preemptible: rng.IntN(5) != 0,
		}
		if rng.IntN(2) == 0 {
			c.LastCheckpoint = t0.Add(-time.Duration(rng.IntN(20)-2) * 10 * time.Second)
		}
		running[i] = c
	}
	return p, running, int(arriving) % 9
}

// reference restates the rules of the package independently of its code.
func reference(p preempt.Policy, running []victim.Candidate, arriving int, now time.Time) (eligible, victims []victim.Candidate) {
	if p.Validate() != nil {
		return nil, nil
	}
	p = p.WithDefaults()
	for _, c := range running {
		run := max(now.Sub(c.StartedAt), 0)
		if p.Disabled || !c.Preemptible || slices.Contains(p.NeverPreempted, c.Level) || run < p.MinRunTime ||
			(p.MaxPreemptions != preempt.Unlimited && c.Preemptions >= p.MaxPreemptions) {
			continue
		}
		eligible = append(eligible, c)
		if c.Level < arriving && arriving-c.Level >= p.MinLevelGap && !slices.Contains(p.NeverPreempt, arriving) {
			victims = append(victims, c)
		}
	}
	lost := func(c victim.Candidate) time.Duration {
		since := c.StartedAt
		if c.LastCheckpoint.After(since) {
			since = c.LastCheckpoint
		}
		return max(now.Sub(since), 0)
	}
	slices.SortFunc(victims, func(a, b victim.Candidate) int {
		if a.Level != b.Level {
			return a.Level - b.Level
		}
		if a.Preemptions != b.Preemptions {
			return a.Preemptions - b.Preemptions
		}
		if la, lb := lost(a), lost(b); la != lb {
			return int(la - lb)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return eligible, victims
}

func checkChoose(t *testing.T, p preempt.Policy, running []victim.Candidate, arriving int) {
	t.Helper()
	eligible, victims := reference(p, running, arriving, t0)
	victim, ok := vp(p).Choose(running, arriving, t0)
	if len(victims) == 0 {
		require.False(t, ok, "chose %+v, reference found none", victim)
		return
	}
	require.True(t, ok, "chose none, reference found %+v", victims[0])
	// Never an ineligible candidate, and always the best one.
	require.True(t, vp(p).Eligible(victim, t0))
	require.True(t, vp(p).Preempts(arriving, victim.Level))
	require.Contains(t, running, victim)
	require.Equal(t, victims[0], victim)
	// Preemptions spread: no victim of its level was displaced fewer times.
	for _, c := range victims {
		if c.Level == victim.Level {
			require.LessOrEqual(t, victim.Preemptions, c.Preemptions, "%+v was preempted fewer times", c)
		}
	}

	// The choice does not depend on the order of running.
	shuffled := slices.Clone(running)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	again, ok := vp(p).Choose(shuffled, arriving, t0)
	require.True(t, ok)
	require.Equal(t, victim, again)

	// LowestEligibleLevel agrees with Eligible.
	low, ok := vp(p).LowestEligibleLevel(running, t0)
	require.True(t, ok)
	for _, c := range eligible {
		require.LessOrEqual(t, low, c.Level)
	}
	require.LessOrEqual(t, low, victim.Level)

	// Victim is the one Choose takes for any arrival urgent enough.
	v, ok := vp(p).Victim(running, t0)
	require.True(t, ok)
	require.Equal(t, low, v.Level)
	if l := vp(p).MinPreemptingLevel(v.Level); vp(p).Preempts(l, v.Level) {
		got, ok := vp(p).Choose(running, l, t0)
		require.True(t, ok)
		require.Equal(t, v, got)
	}
}

func FuzzChoose(f *testing.F) {
	f.Add(uint64(1), uint8(8), int8(5), int8(0), int8(0), int8(0), uint16(0))
	f.Add(uint64(2), uint8(64), int8(7), int8(30), int8(2), int8(2), uint16(0x55))
	f.Add(uint64(3), uint8(64), int8(8), int8(-1), int8(-1), int8(1), uint16(0xfc))
	f.Add(uint64(4), uint8(3), int8(1), int8(0), int8(-2), int8(-1), uint16(3))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, arriving, minRun, maxPre, gap int8, flags uint16) {
		p, running, arr := scenario(seed, n, arriving, minRun, maxPre, gap, flags)
		checkChoose(t, p, running, arr)
	})
}

// TestChooseProperty runs the fuzz property over many random scenarios in
// every plain `go test`.
func TestChooseProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 42))
	for range 3000 {
		p, running, arr := scenario(rng.Uint64(), uint8(rng.IntN(65)), int8(rng.IntN(10)),
			int8(rng.IntN(16)*5-5), int8(rng.IntN(6)-1), int8(rng.IntN(4)), uint16(rng.Uint32()))
		checkChoose(t, p, running, arr)
	}
}
