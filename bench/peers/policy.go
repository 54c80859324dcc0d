package main

import "github.com/overtake/overtake/preempt"

// preemptUnlimited lets the urgent-latency workload preempt the same low
// tasks sample after sample.
func preemptUnlimited() preempt.Policy { return preempt.Policy{MaxPreemptions: preempt.Unlimited} }
