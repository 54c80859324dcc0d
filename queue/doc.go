// Package queue is Overtake's Redis queue as producers and operators use
// it: enqueue tasks with a priority level (one at a time or in batches),
// inspect them, read stats, rates and the preemption feed, pause and resume
// levels, and administer dead letters. Workers run the tasks with package
// runtime, given the same Client.
//
// The main flow (see Example):
//
//	q, err := queue.New(rdb, queue.Config{Name: "default"}) // levels low, normal, high
//	t, err := q.Enqueue(ctx, queue.NewTask("email", payload), queue.LevelNamed("high"))
//	info, err := q.Inspect(ctx, t.ID) // state, level, attempts, checkpoint, last error
//
// Operators' tools read more, as the overtake command and the console do
// (see Example_operators): the queues of a namespace (Queues), a queue's
// stored shape (ReadShape, Shape.Apply) and a task with the lease a
// worker holds on it (Client.InspectDetail, Client.RunningDetails).
//
// Every key of one queue shares the hash tag {<ns>:<queue>}, so each
// script touches one slot and runs unchanged on Redis Cluster. Scripts use
// Redis's clock and fail closed on keys of the wrong type (ErrCorrupt).
// The storage layer below this package (internal/store) owns the data
// model; docs/design.md describes it.
package queue
