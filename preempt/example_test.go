package preempt_test

import (
	"fmt"

	"github.com/overtake/overtake/preempt"
)

func ExamplePolicy_Validate() {
	err := preempt.Policy{MinLevelGap: -1}.Validate()
	fmt.Println(err)
	// Output:
	// overtake: invalid preemption policy: MinLevelGap is -1, must be at least 1
}
