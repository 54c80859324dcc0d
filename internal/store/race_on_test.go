//go:build race

package store

// raceAllocs is what a race build allocates beyond a normal one in the
// allocation tests: newID's random bytes escape to the heap through
// crypto/rand.Read's instrumentation.
const raceAllocs = 1
