// Command overtake-chaos proves Overtake's guarantees under faults, against
// a real redis-server with AOF (appendfsync always) and real worker
// processes (this binary, re-executed as `overtake-chaos worker`), all on
// 127.0.0.1.
//
// It enqueues tasks over the levels at a steady rate, with urgent arrivals
// that preempt, while it SIGKILLs a random worker every few seconds (and
// restarts it), SIGSTOPs one past its lease (and resumes it), SIGKILLs Redis
// once (and restarts it from its AOF), and cuts the network to Redis for a
// while with a loopback TCP proxy. The handlers keep their own ledger in
// Redis. At the end it prints a table and exits 1 on any breach: a task not
// done exactly once as far as the ledger can tell (duplicates are counted
// and attributed to a cause), lost tasks, overlapping runs that were not
// fenced off, checkpoint progress that went backwards. It also reports the
// urgent tasks' start latency with and without the chaos.
//
// Then the failover scenario (-failover-tasks, 0 skips it): a primary with
// AOF (appendfsync everysec), one replica and three sentinels
// (internal/testredis/sentinelproc), worker processes and the producer on
// go-redis failover clients, the primary SIGKILLed halfway through the feed
// and the old primary rejoining as a replica after the promotion. The
// producer's queue has WaitReplicas 1 (WAIT after each Enqueue, on the same
// connection): a task that a replica confirmed
// and that is not done is a breach; an acknowledged task that no replica had
// yet and that the failover lost is counted (asynchronous replication), not
// a breach. Its table adds the promotion time and the first task start after
// the kill.
//
// Then the fail-back case (-failbacks, 1 by default, 0 skips it), once the
// failover scenario's queue is empty: the primary is SIGKILLed, its replica
// promoted, and the old primary, back as a replica, promoted again 2 s
// later (SENTINEL FAILOVER) while the demoted one lives on, a primary
// still, for some 10 s. An idle worker process with the default settings
// (a poll every 10 s) runs probes enqueued on the final primary from 1 s
// after it answers; a probe that starts 1 s or more after its Enqueue, or
// never, is a breach (a wake-up subscription left on the demoted primary).
//
// `make chaos` runs it at full size; `make chaos/ci` is the bounded form
// that .ci/run runs. -duration makes it a soak (`make soak`): the faults of
// the chaos phase repeat every minute (-cycle), the primary is killed every
// 30 s (-failover-every), and the tasks fill about the duration.
package main
