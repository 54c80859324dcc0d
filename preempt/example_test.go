package preempt_test

import (
	"fmt"
	"time"

	"github.com/overtake/overtake/preempt"
)

func ExamplePolicy_Validate() {
	err := preempt.Policy{MinLevelGap: -1}.Validate()
	fmt.Println(err)
	// Output:
	// overtake: invalid preemption policy: MinLevelGap is -1, must be at least 1
}

// A policy is plain configuration (runtime.Config.Preemption); zero fields
// take their defaults.
func ExamplePolicy() {
	policy := preempt.Policy{
		MinRunTime:     2 * time.Second, // let short tasks finish
		NeverPreempted: []int{0},        // level 0 always runs to completion
	}
	p := policy.WithDefaults() // what runtime.New does with Config{Preemption: policy}
	fmt.Println(p.MinRunTime, p.MinLevelGap, p.MaxPreemptions, p.Validate())
	// Output: 2s 1 3 <nil>
}
