// Command producer enqueues one welcome email for the worker example, at a
// priority level (low, normal or high).
//
//	REDIS_URL=redis://127.0.0.1:6379 go run ./examples/producer ada@example.com high
package main
