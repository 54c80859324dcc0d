// Package queue is the Redis data model of Overtake: keys, Lua scripts, the
// task record codec, and the transitions of a task (enqueue, lease, ack,
// retry, dead-letter, requeue, recover, inspect). It is the only code that
// speaks to Redis about tasks.
//
// The main flow:
//
//	c, _ := queue.New(rdb, queue.Config{Name: "default"})
//	t, _ := c.Enqueue(ctx, queue.NewTask("email", payload), queue.Level(2))
//	res, _ := c.Lease(ctx, wire.LeaseRequest{Worker: "w1", Count: 1})
//	_ = c.Ack(ctx, res.Tasks[0])
//
// Every key of one queue shares the hash tag {<ns>:<queue>}, so each script
// touches one slot and runs unchanged on Redis Cluster. The data model is
// schema 2: a task is one STRING record while it waits, a
// small state once it moved and its checkpoint apart; scripts use Redis's
// clock and fail closed on keys of the wrong type (ErrCorrupt). See the
// comment of luaPrelude in lua.go and the README's "How it works".
package queue
