// Command transcode is a worker whose long, low-priority transcodes give way
// to urgent thumbnails: a preempted transcode saves how many segments it
// finished and resumes there later; a canceled one stops and saves nothing.
//
//	export REDIS_URL=redis://127.0.0.1:6379
//	go run ./examples/transcode                       # the worker (one slot)
//	go run ./examples/transcode transcode movie.mp4   # enqueue 20 segments at low
//	go run ./examples/transcode thumbnail movie.mp4   # enqueue at high: preempts it
//	go run ./examples/transcode cancel TASK_ID        # cancel it: it stops and saves nothing
package main
