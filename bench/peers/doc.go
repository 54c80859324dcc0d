// Command peers benchmarks Overtake against hibiken/asynq on one
// redis-server that it starts on a free 127.0.0.1 port, in one run, over
// several rounds, and prints a markdown table of medians with each figure
// also as a fraction of the EVALSHA ceiling of the same run; it writes the
// table to RESULTS.md and PNG charts beside it. `make bench-peers` runs it.
//
// It is a module of its own so that asynq never enters Overtake's go.mod.
package main
