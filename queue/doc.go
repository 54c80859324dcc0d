// Package queue is Overtake's Redis queue as producers and operators use
// it: enqueue tasks with a priority level (one at a time or in batches),
// inspect them, read stats, rates and the preemption feed, pause and resume
// levels, and administer dead letters. Workers run the tasks with package
// runtime, which uses the same Client.
//
// The main flow (see Example):
//
//	q, err := queue.New(rdb, queue.Config{Name: "default"}) // levels low, normal, high
//	t, err := q.Enqueue(ctx, queue.NewTask("email", payload), queue.LevelNamed("high"))
//	info, err := q.Inspect(ctx, t.ID) // state, level, attempts, checkpoint, last error
//
// Every key of one queue shares the hash tag {<ns>:<queue>}, so each script
// touches one slot and runs unchanged on Redis Cluster. The data model is
// schema 2: a task is one STRING record while it waits, a
// small state once it moved and its checkpoint apart; scripts use Redis's
// clock and fail closed on keys of the wrong type (ErrCorrupt). See the
// comment of luaPrelude in lua.go and the README's "How it works".
package queue
