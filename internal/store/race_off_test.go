//go:build !race

package store

// raceBuild: see race_on_test.go.
const raceBuild = false
