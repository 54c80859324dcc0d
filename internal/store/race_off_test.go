//go:build !race

package store

// raceAllocs is 0 outside a race build (see race_on_test.go).
const raceAllocs = 0
