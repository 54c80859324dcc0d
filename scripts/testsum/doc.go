// Command testsum reads `go test -json` on stdin and prints what plain
// `go test` would (package results, and the output of failed tests only),
// then one closing line "tests: N passed, N failed, N skipped" counting
// tests and subtests.
//
//	go test -json ./... | go run ./scripts/testsum
//
// If OVERTAKE_TESTSUM_FILE is set, "passed failed skipped" is appended to it
// so a caller (.ci/run) can add up several runs. testsum exits 1 if a test or
// a package failed, so it is safe without pipefail too.
package main
