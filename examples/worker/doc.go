// Command worker is the smallest Overtake worker: it sends welcome emails,
// most urgent first, until it gets SIGINT or SIGTERM; then every running
// task saves its checkpoint and goes back to the queue.
//
//	REDIS_URL=redis://127.0.0.1:6379 go run ./examples/worker
package main
