// Command overtake-bench measures Overtake against a real Redis in one run
// and prints the figures as a markdown table: throughput, Redis round trips
// per task, Redis's own ceiling, wake and preemption latency, idle cost,
// checkpoint cost, and the cost of preemption and of tracing.
//
//	go run ./cmd/overtake-bench                      # starts its own redis-server
//	go run ./cmd/overtake-bench --redis 127.0.0.1:6379
//	go run ./cmd/overtake-bench --tasks 10000        # quick run
//	go run ./cmd/overtake-bench --only shards        # one queue over a Redis Cluster it starts
//
// Against a server given with --redis (or OVERTAKE_REDIS_ADDR) it writes
// only keys of its own namespace and deletes them at the end; the idle-cost
// figure assumes nothing else uses that server meanwhile.
package main
