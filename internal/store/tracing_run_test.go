package store_test

import (
	"github.com/overtake/overtake/internal/testredis"

	"github.com/overtake/overtake/internal/store"

	"fmt"
	"testing"

	"github.com/overtake/overtake/queue"
)

// RunNumber counts the runs a record knows of: those that ended in a
// transition (RunSpans) and those recovered after their worker was lost.
func TestRunNumber(t *testing.T) {
	q, err := queue.New(testredis.Mini(t).Client, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	eng := store.Of(q)
	spans := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("00-0af7651916cd43dd8448eb211c80319c-%016x-01", i+1)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		t    store.Task
		want int
	}{
		{"first run", store.Task{}, 1},
		{"after a preemption", store.Task{Info: store.Info{Preemptions: 1}, RunSpans: spans(1)}, 2},
		{"after a shutdown requeue, which counts no preemption", store.Task{RunSpans: spans(1)}, 2},
		{"after a crash", store.Task{Info: store.Info{Recoveries: 1}}, 2},
		{"after a retry and a crash", store.Task{Info: store.Info{Attempt: 1, Recoveries: 1}, RunSpans: spans(1)}, 3},
		{"past the kept spans", store.Task{Info: store.Info{Attempt: 10, Preemptions: 20}, RunSpans: spans(store.MaxRunSpans)}, 31},
	} {
		if got := eng.RunNumber(&tc.t); got != tc.want {
			t.Errorf("%s: run %d, want %d", tc.name, got, tc.want)
		}
	}
}
