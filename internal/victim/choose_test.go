package victim_test

import (
	"github.com/overtake/overtake/internal/victim"

	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/preempt"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// cand is a preemptible task at level that started ago before t0.
func cand(id string, level int, ago time.Duration) victim.Candidate {
	return victim.Candidate{ID: id, Level: level, StartedAt: t0.Add(-ago), Preemptible: true}
}

func with(c victim.Candidate, f func(*victim.Candidate)) victim.Candidate {
	f(&c)
	return c
}

func TestChoose(t *testing.T) {
	ckpt := func(ago time.Duration) func(*victim.Candidate) {
		return func(c *victim.Candidate) { c.LastCheckpoint = t0.Add(-ago) }
	}
	pre := func(n int) func(*victim.Candidate) {
		return func(c *victim.Candidate) { c.Preemptions = n }
	}
	tests := []struct {
		name     string
		policy   preempt.Policy
		running  []victim.Candidate
		arriving int
		want     string // victim ID; "" means none
	}{
		{name: "empty set", arriving: 5},
		{name: "zero policy uses defaults", running: []victim.Candidate{cand("a", 0, time.Minute)}, arriving: 1, want: "a"},
		{name: "equal level: none", running: []victim.Candidate{cand("a", 2, time.Minute)}, arriving: 2},
		{name: "higher level: none", running: []victim.Candidate{cand("a", 3, time.Minute)}, arriving: 2},
		{name: "lowest level first", running: []victim.Candidate{cand("b", 1, time.Minute), cand("a", 0, time.Second), cand("c", 2, time.Hour)}, arriving: 3, want: "a"},
		{name: "opt-out: none", running: []victim.Candidate{with(cand("a", 0, time.Minute), func(c *victim.Candidate) { c.Preemptible = false })}, arriving: 3},
		{name: "opt-out skipped for next", running: []victim.Candidate{with(cand("a", 0, time.Minute), func(c *victim.Candidate) { c.Preemptible = false }), cand("b", 1, time.Minute)}, arriving: 3, want: "b"},
		{name: "below max preemptions", running: []victim.Candidate{with(cand("a", 0, time.Minute), func(c *victim.Candidate) { c.Preemptions = 2 })}, arriving: 1, want: "a"},
		{name: "at default max preemptions: none", running: []victim.Candidate{with(cand("a", 0, time.Minute), func(c *victim.Candidate) { c.Preemptions = 3 })}, arriving: 1},
		{name: "over custom max preemptions: none", policy: preempt.Policy{MaxPreemptions: 1}, running: []victim.Candidate{with(cand("a", 0, time.Minute), func(c *victim.Candidate) { c.Preemptions = 1 })}, arriving: 1},
		{name: "unlimited preemptions", policy: preempt.Policy{MaxPreemptions: preempt.Unlimited}, running: []victim.Candidate{with(cand("a", 0, time.Minute), func(c *victim.Candidate) { c.Preemptions = 1000 })}, arriving: 1, want: "a"},
		{name: "under min run time: none", policy: preempt.Policy{MinRunTime: 10 * time.Second}, running: []victim.Candidate{cand("a", 0, 9*time.Second)}, arriving: 1},
		{name: "exactly min run time", policy: preempt.Policy{MinRunTime: 10 * time.Second}, running: []victim.Candidate{cand("a", 0, 10*time.Second)}, arriving: 1, want: "a"},
		{name: "min run time skips young low task", policy: preempt.Policy{MinRunTime: 10 * time.Second}, running: []victim.Candidate{cand("young", 0, time.Second), cand("old", 1, time.Minute)}, arriving: 2, want: "old"},
		{name: "start in the future counts as just started", running: []victim.Candidate{cand("a", 0, -time.Minute)}, arriving: 1, want: "a"},
		{name: "never preempt arriving level: none", policy: preempt.Policy{NeverPreempt: []int{4}}, running: []victim.Candidate{cand("a", 0, time.Minute)}, arriving: 4},
		{name: "never preempt other level", policy: preempt.Policy{NeverPreempt: []int{4}}, running: []victim.Candidate{cand("a", 0, time.Minute)}, arriving: 3, want: "a"},
		{name: "never preempted level skipped", policy: preempt.Policy{NeverPreempted: []int{0}}, running: []victim.Candidate{cand("a", 0, time.Minute), cand("b", 1, time.Minute)}, arriving: 3, want: "b"},
		{name: "never preempted only: none", policy: preempt.Policy{NeverPreempted: []int{0, 1}}, running: []victim.Candidate{cand("a", 0, time.Minute), cand("b", 1, time.Minute)}, arriving: 3},
		{name: "disabled: none", policy: preempt.Policy{Disabled: true}, running: []victim.Candidate{cand("a", 0, time.Minute)}, arriving: 9},
		{name: "gap not met: none", policy: preempt.Policy{MinLevelGap: 2}, running: []victim.Candidate{cand("a", 1, time.Minute)}, arriving: 2},
		{name: "gap met", policy: preempt.Policy{MinLevelGap: 2}, running: []victim.Candidate{cand("a", 1, time.Minute)}, arriving: 3, want: "a"},
		{name: "gap picks lowest that meets it", policy: preempt.Policy{MinLevelGap: 2}, running: []victim.Candidate{cand("b", 2, time.Minute), cand("a", 1, time.Minute)}, arriving: 3, want: "a"},
		{name: "tie: most recently started", running: []victim.Candidate{cand("old", 0, time.Hour), cand("new", 0, time.Minute), cand("mid", 0, 10*time.Minute)}, arriving: 1, want: "new"},
		{name: "tie: most recent checkpoint", running: []victim.Candidate{with(cand("a", 0, time.Hour), ckpt(5*time.Second)), with(cand("b", 0, time.Hour), ckpt(time.Second)), cand("c", 0, time.Hour)}, arriving: 1, want: "b"},
		{name: "tie: checkpoint beats later start", running: []victim.Candidate{with(cand("ck", 0, time.Hour), ckpt(time.Second)), cand("fresh", 0, time.Minute)}, arriving: 1, want: "ck"},
		{name: "tie: later start beats older checkpoint", running: []victim.Candidate{with(cand("ck", 0, time.Hour), ckpt(5*time.Minute)), cand("fresh", 0, time.Minute)}, arriving: 1, want: "fresh"},
		{name: "tie: checkpoint from earlier run protects nothing", running: []victim.Candidate{with(cand("resumed", 0, time.Minute), ckpt(time.Hour)), cand("fresh", 0, 30*time.Second)}, arriving: 1, want: "fresh"},
		{name: "tie: level beats work lost", running: []victim.Candidate{with(cand("hi", 1, time.Hour), ckpt(0)), cand("lo", 0, time.Hour)}, arriving: 2, want: "lo"},
		{name: "tie: fewest preemptions beats least work lost", running: []victim.Candidate{with(cand("resumed", 0, time.Second), pre(1)), with(cand("long", 0, time.Hour), ckpt(time.Minute))}, arriving: 1, want: "long"},
		{name: "tie: fewest preemptions beats checkpoint", running: []victim.Candidate{with(with(cand("twice", 0, time.Hour), pre(2)), ckpt(0)), with(cand("once", 0, time.Hour), pre(1))}, arriving: 1, want: "once"},
		{name: "tie: equal preemptions, least work lost", running: []victim.Candidate{with(cand("old", 0, time.Hour), pre(1)), with(cand("new", 0, time.Minute), pre(1))}, arriving: 1, want: "new"},
		{name: "tie: level beats preemptions", running: []victim.Candidate{cand("hi", 1, time.Hour), with(cand("lo", 0, time.Hour), pre(2))}, arriving: 2, want: "lo"},
		{name: "tie: smallest ID", running: []victim.Candidate{cand("c", 0, time.Minute), cand("a", 0, time.Minute), cand("b", 0, time.Minute)}, arriving: 1, want: "a"},
		{name: "tie: both in the future", running: []victim.Candidate{cand("z", 0, -time.Minute), cand("y", 0, -time.Hour)}, arriving: 1, want: "y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			victim, ok := vp(tt.policy).Choose(tt.running, tt.arriving, t0)
			if tt.want == "" {
				require.False(t, ok, "chose %q", victim.ID)
				require.Zero(t, victim)
				return
			}
			require.True(t, ok)
			require.Equal(t, tt.want, victim.ID)
			require.True(t, vp(tt.policy).Eligible(victim, t0))
			require.True(t, vp(tt.policy).Preempts(tt.arriving, victim.Level))
		})
	}
}

func TestLowestEligibleLevel(t *testing.T) {
	optOut := func(c *victim.Candidate) { c.Preemptible = false }
	tests := []struct {
		name    string
		policy  preempt.Policy
		running []victim.Candidate
		want    int
		wantOK  bool
	}{
		{name: "empty set"},
		{name: "lowest", running: []victim.Candidate{cand("a", 3, time.Minute), cand("b", 1, time.Minute), cand("c", 2, time.Minute)}, want: 1, wantOK: true},
		{name: "skips opt-out", running: []victim.Candidate{with(cand("a", 0, time.Minute), optOut), cand("b", 2, time.Minute)}, want: 2, wantOK: true},
		{name: "skips never preempted", policy: preempt.Policy{NeverPreempted: []int{0}}, running: []victim.Candidate{cand("a", 0, time.Minute), cand("b", 2, time.Minute)}, want: 2, wantOK: true},
		{name: "skips young", policy: preempt.Policy{MinRunTime: time.Minute}, running: []victim.Candidate{cand("a", 0, time.Second), cand("b", 2, time.Hour)}, want: 2, wantOK: true},
		{name: "none eligible", running: []victim.Candidate{with(cand("a", 0, time.Minute), optOut)}},
		{name: "disabled", policy: preempt.Policy{Disabled: true}, running: []victim.Candidate{cand("a", 0, time.Minute)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := vp(tt.policy).LowestEligibleLevel(tt.running, t0)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestPreempts(t *testing.T) {
	tests := []struct {
		name             string
		policy           preempt.Policy
		arriving, victim int
		want             bool
	}{
		{name: "higher", arriving: 2, victim: 1, want: true},
		{name: "equal", arriving: 2, victim: 2},
		{name: "lower", arriving: 1, victim: 2},
		{name: "gap", policy: preempt.Policy{MinLevelGap: 3}, arriving: 3, victim: 1},
		{name: "gap met", policy: preempt.Policy{MinLevelGap: 3}, arriving: 4, victim: 1, want: true},
		{name: "never preempt", policy: preempt.Policy{NeverPreempt: []int{2}}, arriving: 2, victim: 0},
		{name: "disabled", policy: preempt.Policy{Disabled: true}, arriving: 2, victim: 0},
		{name: "extreme levels do not overflow", arriving: int(^uint(0) >> 1), victim: -int(^uint(0)>>1) - 1, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, vp(tt.policy).Preempts(tt.arriving, tt.victim))
		})
	}
}

func TestWorkLost(t *testing.T) {
	c := cand("a", 0, time.Hour)
	require.Equal(t, time.Hour, c.WorkLost(t0))
	require.Equal(t, time.Hour, c.RunTime(t0))
	c.LastCheckpoint = t0.Add(-time.Minute)
	require.Equal(t, time.Minute, c.WorkLost(t0))
	c.LastCheckpoint = t0.Add(-2 * time.Hour) // earlier run
	require.Equal(t, time.Hour, c.WorkLost(t0))
	c.StartedAt = t0.Add(time.Second) // clock skew
	require.Zero(t, c.WorkLost(t0))
	require.Zero(t, c.RunTime(t0))
}

func TestChooseDoesNotModifyRunning(t *testing.T) {
	running := []victim.Candidate{cand("b", 0, time.Minute), cand("a", 0, time.Minute)}
	before := append([]victim.Candidate(nil), running...)
	_, _ = vp(preempt.Policy{}).Choose(running, 1, t0)
	require.Equal(t, before, running)
}

func TestVictim(t *testing.T) {
	optOut := func(c *victim.Candidate) { c.Preemptible = false }
	tests := []struct {
		name    string
		policy  preempt.Policy
		running []victim.Candidate
		want    string
	}{
		{name: "empty set"},
		{name: "lowest level", running: []victim.Candidate{cand("b", 2, time.Minute), cand("a", 1, time.Hour)}, want: "a"},
		{name: "least work lost", running: []victim.Candidate{cand("old", 1, time.Hour), cand("new", 1, time.Minute)}, want: "new"},
		{name: "smallest ID", running: []victim.Candidate{cand("b", 1, time.Minute), cand("a", 1, time.Minute)}, want: "a"},
		{name: "fewest preemptions", running: []victim.Candidate{with(cand("new", 1, time.Second), func(c *victim.Candidate) { c.Preemptions = 1 }), cand("old", 1, time.Hour)}, want: "old"},
		{name: "skips opt-out", running: []victim.Candidate{with(cand("a", 0, time.Minute), optOut), cand("b", 3, time.Minute)}, want: "b"},
		{name: "ignores never preempt", policy: preempt.Policy{NeverPreempt: []int{1, 2, 3}}, running: []victim.Candidate{cand("a", 0, time.Minute)}, want: "a"},
		{name: "disabled", policy: preempt.Policy{Disabled: true}, running: []victim.Candidate{cand("a", 0, time.Minute)}},
		{name: "none eligible", policy: preempt.Policy{MinRunTime: time.Hour}, running: []victim.Candidate{cand("a", 0, time.Minute)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := vp(tt.policy).Victim(tt.running, t0)
			require.Equal(t, tt.want != "", ok)
			require.Equal(t, tt.want, v.ID)
		})
	}
}

func TestMinPreemptingLevel(t *testing.T) {
	require.Equal(t, 3, vp(preempt.Policy{}).MinPreemptingLevel(2))
	require.Equal(t, 5, vp(preempt.Policy{MinLevelGap: 3}).MinPreemptingLevel(2))
}

// vp is p with the runtime's questions.
func vp(p preempt.Policy) victim.Policy { return victim.Policy{Policy: p} }

// An invalid policy fails safe: nothing is ever preempted.
func TestInvalidPolicyPreemptsNothing(t *testing.T) {
	now := time.Unix(1_000, 0)
	p := vp(preempt.Policy{MinLevelGap: -1})
	c := victim.Candidate{ID: "a", Level: 0, StartedAt: now.Add(-time.Hour), Preemptible: true}
	require.False(t, p.Eligible(c, now))
	require.False(t, p.Preempts(5, 0))
	_, ok := p.Choose([]victim.Candidate{c}, 5, now)
	require.False(t, ok)
	_, ok = p.LowestEligibleLevel([]victim.Candidate{c}, now)
	require.False(t, ok)
	_, ok = p.Victim([]victim.Candidate{c}, now)
	require.False(t, ok)
}

// TestPreemptionsSpread replays the arrivals of issue 30 row 4 on one
// worker: each arrival preempts the chosen victim, which is requeued at
// the head of its level and resumes at once in the freed slot, so it is
// the one that loses least work. No task is displaced again while
// another was displaced fewer times, and none reaches MaxPreemptions
// while another has not been preempted at all.
func TestPreemptionsSpread(t *testing.T) {
	pol := vp(preempt.Policy{})
	running := make([]victim.Candidate, 4)
	for i := range running {
		running[i] = cand(string(rune('a'+i)), 0, time.Duration(i+1)*time.Minute)
		running[i].LastCheckpoint = t0.Add(-time.Duration(i+1) * 100 * time.Millisecond)
	}
	now := t0
	for arrival := range 8 {
		now = now.Add(300 * time.Millisecond)
		v, ok := pol.Choose(running, 1, now)
		require.True(t, ok, "arrival %d", arrival)
		for _, c := range running {
			require.LessOrEqual(t, v.Preemptions, c.Preemptions, "arrival %d took %s, %s was preempted fewer times", arrival, v.ID, c.ID)
		}
		i := slices.IndexFunc(running, func(c victim.Candidate) bool { return c.ID == v.ID })
		running[i].Preemptions++
		running[i].StartedAt = now // resumed: the youngest run
	}
	for _, c := range running {
		require.Equal(t, 2, c.Preemptions, c.ID)
	}
}
