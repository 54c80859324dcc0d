package store

// The lease sets leases and running change on every lease and every ack,
// and stay small (about as many members as tasks run at once). Below
// zset-max-listpack-entries (128 by default) Redis keeps a sorted set as a
// listpack, where every ZADD and ZREM scans the whole set: at 64 running
// tasks about 1 µs per member. Each of the two sets therefore holds one
// member that is no task, the anchor, longer than zset-max-listpack-value
// (64 bytes by default), which keeps it a skiplist (O(log n) updates; Redis
// never turns a skiplist back into a listpack). The lease script adds it
// with the tasks it adds, at anchorScore, above every deadline and level,
// so reads bounded below it (below a deadline, a level, or
// "(anchorScore") never see it. An ID equal to it is refused at enqueue.
//
// Drain of 50k no-op tasks at concurrency 64, Redis CPU per 10k tasks with
// the sets as listpacks against skiplists: 162 vs 123, 130 vs 119; a run
// that enqueues and processes, 6 alternating rounds, medians: 202.5 vs 188.
//
// lua/anchor.lua holds the same three values for the scripts
// (TestLuaConstants).
const (
	anchorMember = "~ overtake anchor: not a task; keeps this sorted set a skiplist, cheaper to update ~"
	// anchorScore is 10^13 ms (the year 2286): above every lease deadline
	// and level, yet a worker of the release before the anchor, which reads
	// the first member of leases as its next lease expiry, gets a finite
	// wait from it (2^53 ms would overflow its time.Duration).
	anchorScore = "10000000000000"
)

// belowAnchor is the exclusive upper bound of a range read of leases or
// running that must not return the anchor.
const belowAnchor = "(" + anchorScore
