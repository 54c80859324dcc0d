// Package bench holds Go benchmarks of Overtake's per-call costs: Enqueue,
// EnqueueBatch, Lease+Ack, checkpoint saves and the wake latency of an idle
// runtime, each on miniredis and, when available, a real Redis (see
// internal/testredis: OVERTAKE_REDIS_ADDR, or a redis-server on PATH).
//
//	go test -run '^$' -bench . -benchmem ./bench
//
// The end-to-end figures (throughput, round trips per task, preemption
// latency, idle cost, the cost of tracing) come from cmd/overtake-bench.
package bench
