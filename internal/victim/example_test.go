package victim_test

import (
	"fmt"
	"time"

	"github.com/overtake/overtake/internal/victim"
	"github.com/overtake/overtake/preempt"
)

func Example() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pol := victim.Policy{Policy: preempt.Policy{MinRunTime: 5 * time.Second}}
	if err := pol.Validate(); err != nil {
		panic(err)
	}

	running := []victim.Candidate{
		{ID: "report", Level: 0, StartedAt: now.Add(-time.Hour), Preemptible: true,
			LastCheckpoint: now.Add(-2 * time.Second)},
		{ID: "export", Level: 0, StartedAt: now.Add(-time.Minute), Preemptible: true},
		{ID: "billing", Level: 0, StartedAt: now.Add(-time.Hour), Preemptible: false},
		{ID: "thumbnail", Level: 1, StartedAt: now.Add(-time.Minute), Preemptible: true},
		{ID: "invoice", Level: 0, StartedAt: now.Add(-10 * time.Second), Preemptible: true, Preemptions: 1,
			LastCheckpoint: now.Add(-time.Second)},
	}

	low, _ := pol.LowestEligibleLevel(running, now)
	fmt.Println("lowest eligible level:", low)

	// "invoice" would lose only 1s, but it gave way once already;
	// of the others "report" loses 2s of work, "export" a minute;
	// "billing" opted out.
	v, ok := pol.Choose(running, 2, now)
	fmt.Println("arriving 2 preempts:", v.ID, ok)

	// An equal level never preempts.
	_, ok = pol.Choose(running, 0, now)
	fmt.Println("arriving 0 preempts anything:", ok)
	// Output:
	// lowest eligible level: 0
	// arriving 2 preempts: report true
	// arriving 0 preempts anything: false
}
