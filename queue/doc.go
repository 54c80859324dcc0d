// Package queue is the Redis data model of Overtake: keys, Lua scripts, the
// task record codec, and the transitions of a task (enqueue, lease, ack,
// retry, dead-letter, requeue, recover, inspect). It is the only code that
// speaks to Redis about tasks.
//
// The main flow:
//
//	c, _ := queue.New(rdb, queue.Config{Queue: "default"})
//	info, _ := c.Enqueue(ctx, queue.NewTask("email", payload), queue.Level(2))
//	tasks, _ := c.Lease(ctx, queue.LeaseRequest{Worker: "w1", Count: 1})
//	_ = c.Ack(ctx, tasks[0])
//
// Every key of one queue shares the hash tag {<ns>:<queue>}, so each script
// touches one slot and runs unchanged on Redis Cluster.
package queue
