// Command tenants serves paying and free tenants from one queue, as the
// Priority Queue pattern suggests: the tenants are priority classes, the
// paying band has a pool of its own with an SLA, and the free band has a
// small pool and ages up, so it keeps moving under any flood of paying
// work and never starves.
//
//	export REDIS_URL=redis://127.0.0.1:6379
//	go run ./examples/tenants                  # the worker: 3 paying slots, 1 free
//	go run ./examples/tenants enqueue paying 20 # 20 reports for paying tenants
//	go run ./examples/tenants enqueue free 5    # 5 for free tenants: they run too
//	go run ./cmd/overtake stats --queue reports --watch  # levels read from Redis
package main
