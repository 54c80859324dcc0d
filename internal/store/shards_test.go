package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// idIn returns a task ID of shard k of a queue of n shards, made from tag.
func idIn(k, n int, tag string) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("%s-%d", tag, i); shardIndex(id, n) == k {
			return id
		}
	}
}

// enqueueIn enqueues a task at level in shard k (of n) and returns it.
func (e *env) enqueueIn(k, n, level int, tag string) *Task {
	e.t.Helper()
	t := NewTask("t", []byte(tag))
	t.ID = idIn(k, n, tag)
	got, err := e.c.Enqueue(e.ctx, t, Level(level))
	require.NoError(e.t, err)
	return got
}

// TestShardLayout checks where a sharded queue's keys live: shard 0 with
// the prefix of a queue without shards, shard k under "{ns:q:k}:", each
// task in the shard its ID names; and that the stored shape holds the
// shard count, refusing a process of another.
func TestShardLayout(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		for k := range 3 {
			task := e.enqueueIn(k, 3, 1, fmt.Sprint("lay", k))
			want := shardKeys(e.c.cfg.Namespace, "q", k)
			require.Equal(t, int64(1), e.rdb.Exists(e.ctx, want.task(task.ID)).Val(), "shard %d record", k)
			require.Equal(t, []string{task.ID}, e.rdb.LRange(e.ctx, want.pending(1), 0, -1).Val())
		}
		require.Equal(t, "{"+e.c.cfg.Namespace+":q}:", e.c.keys.prefix)
		require.Equal(t, "{"+e.c.cfg.Namespace+":q:2}:", e.c.shards[2].keys.prefix)
		sh, err := ReadShape(e.ctx, e.rdb, e.c.cfg.Namespace, "q")
		require.NoError(t, err)
		require.Equal(t, 3, sh.Shards)
		// No shape key in the other shards.
		require.Zero(t, e.rdb.Exists(e.ctx, e.c.shards[1].keys.shape()).Val())

		one, err := New(e.rdb, Config{Namespace: e.c.cfg.Namespace, Name: "q"})
		require.NoError(t, err)
		_, err = one.Stats(e.ctx)
		require.ErrorIs(t, err, ErrShapeMismatch)
		six, err := New(e.rdb, Config{Namespace: e.c.cfg.Namespace, Name: "q", Shards: 6})
		require.NoError(t, err)
		require.ErrorIs(t, six.CheckShape(e.ctx), ErrShapeMismatch)

		// A queue of one shard keeps its shape's bytes (no shards field).
		plain := newEnv(t, b, nil)
		plain.enqueue("x")
		require.NotContains(t, plain.rdb.Get(plain.ctx, plain.c.keys.shape()).Val(), "shards")
	})
}

// TestShardStrictOrder enqueues levels unevenly over the shards (the top
// level only in shard 2, the middle only in shard 1) and leases one task
// at a time: every top task comes before any middle one, every middle one
// before any low one.
func TestShardStrictOrder(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		for i := range 4 {
			e.enqueueIn(0, 3, 0, fmt.Sprint("low", i))
			e.enqueueIn(1, 3, 1, fmt.Sprint("mid", i))
			e.enqueueIn(2, 3, 2, fmt.Sprint("top", i))
		}
		e.enqueueIn(0, 3, 2, "top-in-0")
		var levels []int
		for range 13 {
			res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
			require.NoError(t, err)
			require.Len(t, res.Tasks, 1)
			levels = append(levels, res.Tasks[0].Level)
		}
		require.True(t, slices.IsSortedFunc(levels, func(a, b int) int { return b - a }), "levels leased %v", levels)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 4})
		require.NoError(t, err)
		require.Empty(t, res.Tasks)

		// A lease of several takes from every shard, highest first.
		for i := range 3 {
			e.enqueueIn(i, 3, 2, fmt.Sprint("t2-", i))
			e.enqueueIn(i, 3, 0, fmt.Sprint("t0-", i))
		}
		res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 4})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 4)
		require.Equal(t, []int{2, 2, 2, 0}, []int{res.Tasks[0].Level, res.Tasks[1].Level, res.Tasks[2].Level, res.Tasks[3].Level})
	})
}

// TestShardLifecycle runs a task's calls on a sharded queue: each finds
// the task's shard from its ID (ack, retry, dead letter, requeue,
// checkpoint, cancel, inspect), and the reads of the whole queue (stats,
// depths, dead tasks, running, pending pages, workers) sum the shards.
func TestShardLifecycle(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3; c.Retention = time.Hour })
		var ids []string
		for k := range 3 {
			for i := range 2 {
				ids = append(ids, e.enqueueIn(k, 3, 1, fmt.Sprint("life", k, i)).ID)
			}
		}
		st, err := e.c.Stats(e.ctx)
		require.NoError(t, err)
		require.Equal(t, int64(6), st.Levels[1].Pending)
		d, err := e.c.Depths(e.ctx)
		require.NoError(t, err)
		require.Equal(t, int64(6), d[1])
		page, n, err := e.c.PendingPage(e.ctx, 1, 1, 4)
		require.NoError(t, err)
		require.Equal(t, int64(6), n)
		require.Len(t, page, 4)
		all, err := e.c.Pending(e.ctx, 1)
		require.NoError(t, err)
		require.ElementsMatch(t, ids, all)
		require.Equal(t, all[1:5], page)

		_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 8})
		require.NoError(t, err)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 6})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 6)
		running, total, err := e.c.Running(e.ctx, 0, 10)
		require.NoError(t, err)
		require.Equal(t, int64(6), total)
		require.Len(t, running, 6)
		ws, err := e.c.Workers(e.ctx)
		require.NoError(t, err)
		require.Len(t, ws, 1)
		require.Equal(t, 6, ws[0].Busy, "busy summed over the shards")

		// Heartbeats extend every shard's leases.
		e.clk.Advance(e.c.cfg.LeaseDuration / 2)
		hb, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 8, Leases: res.Tasks})
		require.NoError(t, err)
		require.Empty(t, hb.Lost)

		byID := map[string]*Task{}
		for _, task := range res.Tasks {
			byID[task.ID] = task
		}
		task := func(i int) *Task { return byID[ids[i]] }
		seq, err := e.c.SaveCheckpoint(e.ctx, task(0).ID, task(0).Token, []byte("cp"))
		require.NoError(t, err)
		require.Equal(t, int64(1), seq)
		require.NoError(t, e.c.Ack(e.ctx, task(0)))
		require.NoError(t, e.c.Retry(e.ctx, task(2), e.clk.Now().Add(time.Hour), "later"))
		require.NoError(t, e.c.DeadLetter(e.ctx, task(3), "bad"))
		require.NoError(t, e.c.DeadLetter(e.ctx, task(4), "bad"))
		require.NoError(t, e.c.Requeue(e.ctx, task(5), RequeuePreempted))
		state, err := e.c.Cancel(e.ctx, task(1).ID)
		require.NoError(t, err)
		require.Equal(t, StateActive, state)
		hb, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 8, Leases: []*Task{task(1)}})
		require.NoError(t, err)
		require.Equal(t, []string{task(1).ID}, hb.Canceled)
		require.NoError(t, e.c.CancelRun(e.ctx, task(1)))

		for i, want := range []State{StateDone, StateCanceled, StateRetry, StateDead, StateDead, StatePending} {
			got, err := e.c.Inspect(e.ctx, ids[i])
			require.NoError(t, err)
			require.Equal(t, want, got.State, "task %d", i)
		}
		dead, err := e.c.DeadTasks(e.ctx, 0, 10)
		require.NoError(t, err)
		require.Len(t, dead, 2)
		dead, err = e.c.DeadTasks(e.ctx, 1, 10)
		require.NoError(t, err)
		require.Len(t, dead, 1)
		require.NoError(t, e.c.RequeueDead(e.ctx, ids[3], RequeueDeadOptions{}))
		require.NoError(t, e.c.DeleteDead(e.ctx, ids[4]))
		st, err = e.c.Stats(e.ctx)
		require.NoError(t, err)
		require.Equal(t, int64(2), st.Levels[1].Pending)
		require.Equal(t, int64(1), st.Levels[1].Scheduled)
		require.Equal(t, int64(0), st.Levels[1].Dead)
		require.Equal(t, int64(1), st.Levels[1].Canceled)
		tasks, err := e.c.Tasks(e.ctx, []string{ids[5], ids[3], "nope"})
		require.NoError(t, err)
		require.Equal(t, []string{ids[5], ids[3]}, []string{tasks[0].ID, tasks[1].ID})
		require.NoError(t, e.c.Deregister(e.ctx, "w"))
	})
}

// TestShardPauseUniqueBatch: a pause holds a level in every shard; two
// equal unique tasks meet in one shard whatever their generated IDs; a
// batch is split by shard and every task lands in its own, the shards
// taking as many each.
func TestShardPauseUniqueBatch(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 4 })
		for k := range 4 {
			e.enqueueIn(k, 4, 2, fmt.Sprint("p", k))
		}
		require.NoError(t, e.c.Pause(e.ctx, 2, PauseWait))
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 4})
		require.NoError(t, err)
		require.Empty(t, res.Tasks, "paused in every shard")
		for _, s := range e.c.shards {
			p, err := s.Paused(e.ctx)
			require.NoError(t, err)
			require.Equal(t, map[int]PauseMode{2: PauseWait}, p)
		}
		require.NoError(t, e.c.Resume(e.ctx, 2))
		res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 4})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 4)

		_, err = e.c.Enqueue(e.ctx, NewTask("u", []byte("same")), Unique(time.Hour))
		require.NoError(t, err)
		for range 5 {
			_, err = e.c.Enqueue(e.ctx, NewTask("u", []byte("same")), Unique(time.Hour))
			require.ErrorIs(t, err, ErrDuplicateTask)
		}
		home := shardIndex("u:"+uniqueDigest("u", []byte("other")), 4)
		mine := NewTask("u", []byte("other"))
		mine.ID = idIn((home+1)%4, 4, "mine")
		_, err = e.c.Enqueue(e.ctx, mine, Unique(time.Hour))
		require.ErrorIs(t, err, ErrInvalidTask)

		batch := make([]*Task, 40)
		for i := range batch {
			batch[i] = NewTask("b", []byte{byte(i)})
		}
		got, err := e.c.EnqueueBatch(e.ctx, batch)
		require.NoError(t, err)
		per := make([]int, 4)
		for _, task := range got {
			k := shardIndex(task.ID, 4)
			per[k]++
			require.Equal(t, int64(1), e.rdb.Exists(e.ctx, e.c.shards[k].keys.task(task.ID)).Val())
		}
		for k, n := range per {
			require.Equal(t, 10, n, "shard %d's share of the batch", k)
		}
	})
}

// TestShardSweepAndReserve: a delayed task of any shard is promoted by
// the sweep of a later lease; a reservation takes the highest pending
// task of any shard.
func TestShardSweepAndReserve(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		later := NewTask("t", []byte("d"))
		later.ID = idIn(2, 3, "delayed")
		_, err := e.c.Enqueue(e.ctx, later, ProcessIn(time.Minute))
		require.NoError(t, err)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
		require.NoError(t, err)
		require.Empty(t, res.Tasks)
		require.False(t, res.NextDue.IsZero(), "the delayed task's due time is known")
		e.clk.Advance(time.Minute + time.Second)
		var got []*Task
		for i := 0; i < 3 && len(got) == 0; i++ { // the sweep promotes, a lease after it takes
			res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
			require.NoError(t, err)
			got = res.Tasks
			e.clk.Advance(sweepEvery)
		}
		require.Len(t, got, 1)
		require.Equal(t, later.ID, got[0].ID)

		_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1, Leases: got})
		require.NoError(t, err)
		e.enqueueIn(0, 3, 1, "mid")
		e.enqueueIn(1, 3, 2, "urgent")
		urgent, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w", VictimID: got[0].ID, VictimLevel: 0,
			MinLevel: 1, MaxPreemptions: -1})
		require.NoError(t, err)
		require.Equal(t, idIn(1, 3, "urgent"), urgent.ID)
	})
}

// TestShardFleetCheck: a reservation in one shard sees the fleet's
// leases and running tasks in the others. Worker b runs a level 0 task in
// shard 1 at full capacity; worker a's reservation of an urgent task in
// shard 2, offering its level 1 victim of shard 0, is refused for b's
// lower task (not for a free slot b lacks); ignoring the fleet it
// succeeds, and the victim leaves its own shard's running set.
func TestShardFleetCheck(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		e.enqueueIn(1, 3, 0, "low")
		_, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "b", Capacity: 1})
		require.NoError(t, err)
		bres, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "b", Count: 1})
		require.NoError(t, err)
		require.Len(t, bres.Tasks, 1)
		e.enqueueIn(0, 3, 1, "victim")
		_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "a", Capacity: 1})
		require.NoError(t, err)
		ares, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "a", Count: 1})
		require.NoError(t, err)
		require.Len(t, ares.Tasks, 1)
		victim := ares.Tasks[0]
		e.clk.Advance(time.Second)
		e.enqueueIn(2, 3, 2, "urgent")
		req := ReserveRequest{Worker: "a", VictimID: victim.ID, VictimLevel: 1, MinLevel: 2, MaxPreemptions: -1}
		_, _, err = e.c.Reserve(e.ctx, req)
		require.ErrorIs(t, err, ErrLowerVictimElsewhere)

		// b's task ends: b has a free slot now.
		require.NoError(t, e.c.Ack(e.ctx, bres.Tasks[0]))
		_, _, err = e.c.Reserve(e.ctx, req)
		require.ErrorIs(t, err, ErrFreeSlotInFleet)

		req.IgnoreFleet = true
		urgent, _, err := e.c.Reserve(e.ctx, req)
		require.NoError(t, err)
		require.Equal(t, idIn(2, 3, "urgent"), urgent.ID)
		v := e.c.shardOf(victim.ID)
		require.Equal(t, redis.Nil, e.rdb.ZScore(e.ctx, v.keys.running(), victim.ID).Err(), "victim out of the running set")
		require.NoError(t, e.c.Rejoin(e.ctx, victim))
		require.NoError(t, e.rdb.ZScore(e.ctx, v.keys.running(), victim.ID).Err(), "rejoined")
	})
}

// TestShardRecoveryAndRates: the leases of a worker that stopped
// heartbeating are recovered in every shard and leased again; the rates a
// heartbeat reports are counted once (in shard 0), not once per shard.
func TestShardRecoveryAndRates(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3; c.LeaseDuration = time.Second })
		want := map[string]bool{}
		for k := range 3 {
			want[e.enqueueIn(k, 3, 1, fmt.Sprint("rec", k)).ID] = true
		}
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "gone", Count: 3})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 3)
		e.clk.Advance(2 * time.Second)
		res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 3}) // sweeps: recovers
		require.NoError(t, err)
		if len(res.Tasks) < 3 { // recovered by the sweep, leased by the next call
			more, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 3 - len(res.Tasks)})
			require.NoError(t, err)
			res.Tasks = append(res.Tasks, more.Tasks...)
		}
		require.Len(t, res.Tasks, 3)
		for _, task := range res.Tasks {
			require.True(t, want[task.ID])
			require.Equal(t, 1, task.Recoveries, "task %s", task.ID)
		}

		_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 3, Leases: res.Tasks,
			Counts: map[int]LevelCounts{1: {Processed: 60}}})
		require.NoError(t, err)
		e.clk.Advance(rateBucket) // the current bucket is not counted
		st, err := e.c.Stats(e.ctx)
		require.NoError(t, err)
		require.InDelta(t, 60/RateWindow.Seconds(), st.Levels[1].Rates.Processed, 1e-9, "counted once")
	})
}

// TestShardResumedHeadFirst: a preempted task goes back to the head of its
// level in its shard; a lease of that level takes it before the tasks of
// the other shards, whichever shard the lease starts from.
func TestShardResumedHeadFirst(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		p := e.enqueueIn(1, 3, 0, "preempted")
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
		require.NoError(t, err)
		require.Equal(t, p.ID, res.Tasks[0].ID)
		for i := range 3 {
			e.enqueueIn(i, 3, 0, fmt.Sprint("fresh-a", i))
			e.enqueueIn(i, 3, 0, fmt.Sprint("fresh-b", i))
		}
		for round := range 12 {
			require.NoError(t, e.c.Requeue(e.ctx, res.Tasks[0], RequeuePreempted))
			res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
			require.NoError(t, err)
			require.Equal(t, p.ID, res.Tasks[0].ID, "round %d", round)
		}
		// With more slots than resumed heads, the resumed head and then the
		// other shards' heads: every shard gives its head before its second.
		require.NoError(t, e.c.Requeue(e.ctx, res.Tasks[0], RequeuePreempted))
		res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 2})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 2)
		require.Contains(t, []string{res.Tasks[0].ID, res.Tasks[1].ID}, p.ID)
	})
}
