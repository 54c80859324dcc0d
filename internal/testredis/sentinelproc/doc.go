// Package sentinelproc starts a Redis Sentinel group on 127.0.0.1 for
// Overtake's failover tests and its chaos suite: a primary, its replicas and
// three sentinels that watch them, each a throwaway process of
// internal/redisproc (free loopback port, own data directory, bounded
// lifetime, parent-death signal).
//
// [Start] returns once every replica is in sync and every sentinel knows the
// replicas and the other sentinels, so that a failover can start at once.
// The data nodes write an append-only file with appendfsync everysec, as a
// production primary would; replication is asynchronous. The sentinels use
// a short down-after-milliseconds and failover-timeout (by default 1 s and
// 3 s), so that after [Group.KillPrimary] a replica is promoted within about
// 2-3 s; [Group.WaitFailover] waits for that and reports when.
//
// [Group.FailoverOptions] is what a go-redis FailoverClient needs (the
// master name and the sentinels' addresses). This package does not import
// testing: internal/testredis wraps it for tests (StartSentinel) and
// cmd/overtake-chaos uses it directly.
package sentinelproc
