// Package testredis gives tests Redis backends to run against: an in-process
// miniredis always, a real redis-server when one is available, dedicated
// servers that can be stopped and restarted (outages, persistence), a
// three-node Redis Cluster, and a Sentinel group whose primary can be killed
// (failover).
//
// # Backends
//
// [Backends] and [ForEach] return a miniredis backend plus a real Redis backend
// chosen like this:
//
//   - OVERTAKE_REDIS_ADDR=host:port set: connect to that server. It is shared
//     by every test binary of a `go test ./...` run, so each [Backend] carries
//     a unique Prefix; tests must put it in every key they write (as the queue
//     namespace). Keys under the prefix are deleted when the test ends.
//   - otherwise, if redis-server is on PATH (and -short is not set): one
//     redis-server per test binary is started lazily on a free 127.0.0.1 port
//     with persistence off, and stopped by [Main].
//   - otherwise only miniredis is returned; the first test that asks logs why.
//
// # TestMain
//
// Every package that uses this helper calls [Main] from its TestMain:
//
//	func TestMain(m *testing.M) { testredis.Main(m) }
//
// Main runs the tests, stops every redis-server this package started, then
// checks for leaked goroutines (go.uber.org/goleak) when the tests passed.
// Without it the shared server still dies with the test binary (parent-death
// signal) and after at most OVERTAKE_REDIS_LIFETIME (default 30m), but the
// goroutine leak check does not run.
//
// # Dedicated servers and clusters
//
// [StartServer] starts a redis-server owned by one test; with
// ServerOptions.Persistent it writes an append-only file with fsync on every
// write, so Stop/Kill followed by Restart (same port, same data directory)
// simulates an outage without data loss. [StartCluster] starts three cluster
// masters. [StartSentinel] starts a primary (AOF, fsync every second), a
// replica and three sentinels (internal/testredis/sentinelproc); the test
// connects with a go-redis FailoverClient, kills the primary with
// KillPrimary and waits for the promotion with WaitFailover. All three skip
// the test when redis-server (or redis-cli) is missing, and in -short mode.
//
// Every server listens on 127.0.0.1 only, lives in t.TempDir(), is killed at
// t.Cleanup, and is wrapped in timeout(1) so that it stops by itself even if
// the test binary is killed.
package testredis
