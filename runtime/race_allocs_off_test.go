//go:build !race

package runtime_test

// raceAllocs: a normal build allocates what allocs_test.go counts.
const raceAllocs = 0
