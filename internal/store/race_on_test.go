//go:build race

package store

// raceBuild: the race detector makes some values escape that do not
// otherwise, so allocation guards allow for it.
const raceBuild = true
