//go:build race

package runtime_test

// raceAllocs is what a race build may allocate beyond a normal one per
// Enqueue or per task in the allocation tests (allocs_test.go).
const raceAllocs = 1 // Enqueue: 30
