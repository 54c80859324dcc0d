// Package store is Overtake's storage layer: the Redis data model of a
// queue, its keys, its Lua scripts and the Go calls of both sides. Package
// queue builds the producer and operator API on it (enqueue, inspect,
// stats, pause, dead letters, workers, the preemption feed); package
// runtime calls it directly for what workers do (lease, reserve,
// heartbeat, ack, retry, requeue, rejoin, checkpoints).
//
// Every key of one queue shares the hash tag {<ns>:<queue>}, so each
// script touches one slot and runs unchanged on Redis Cluster. The data
// model is schema 2: a task is one STRING record while it waits, a small
// state once it moved and its checkpoint apart; scripts use Redis's clock
// and fail closed on keys of the wrong type (ErrCorrupt). The scripts are
// the files under lua/ (see luaFiles): the header of lua/prelude.lua
// describes the data model and lists every key, and each script's header
// its KEYS, ARGV, reply and the keys it builds from the prefix.
package store
