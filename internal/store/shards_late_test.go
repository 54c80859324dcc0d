package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// These tests put a hook between a sharded Store and Redis to make one
// call of a lease or a reservation fail or come late, as a loaded machine
// or a failing master does.

// hookedEnv is newEnv on a client of its own with hook h, for 3 shards.
func hookedEnv(t *testing.T, b testredis.Backend, h redis.Hook, tag string) *env {
	rdb := redis.NewClient(&redis.Options{Addr: b.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(h)
	return newEnvOn(t, rdb, b.Prefix+"."+tag, func(c *Config) { c.Shards = 3 })
}

// refuseShard fails the calls of a script (the lease script unless sha
// and src are set) whose keys are under prefix while on.
type refuseShard struct {
	prefix   string
	sha, src string
	on       atomic.Bool
	hits     atomic.Int64
}

func (h *refuseShard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *refuseShard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *refuseShard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		sha, src := h.sha, h.src
		if sha == "" {
			sha, src = leaseScript.Hash(), luaSource("lease.lua")
		}
		if h.on.Load() && len(args) > 3 && (args[1] == sha || args[1] == src) {
			for _, a := range args[3:] {
				if s, ok := a.(string); ok && strings.HasPrefix(s, h.prefix) {
					h.hits.Add(1)
					err := errors.New("ERR test: shard refused")
					cmd.SetErr(err)
					return err
				}
			}
		}
		return next(ctx, cmd)
	}
}

// TestShardLeaseStopsAtFailedWave: while the call of the shard holding a
// preempted task (a resumed head of level 0) fails, a lease of two slots
// does not take another shard's fresh task of that level (its wave goes
// only once the resumed head's call landed); once the shard answers, the
// lease takes the resumed head and then the fresh task. Without the waves'
// stop, the fresh task was leased while the resumed head waited.
func TestShardLeaseStopsAtFailedWave(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		h := &refuseShard{}
		e := hookedEnv(t, b, h, "waves")
		h.prefix = e.c.shards[1].keys.prefix

		p := e.enqueueIn(1, 3, 0, "preempted")
		got := e.lease("w", 1)
		require.Len(t, got, 1)
		require.Equal(t, p.ID, got[0].ID)
		require.NoError(t, e.c.Requeue(e.ctx, got[0], RequeuePreempted))
		fresh := e.enqueueIn(0, 3, 0, "fresh")

		h.on.Store(true)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 2})
		require.Positive(t, h.hits.Load(), "the resumed head's shard was called")
		if err == nil {
			require.Empty(t, res.Tasks, "no fresh task while the resumed head's call fails")
		}

		h.on.Store(false)
		tasks := e.lease("w", 2)
		require.Len(t, tasks, 2)
		ids := []string{tasks[0].ID, tasks[1].ID}
		require.ElementsMatch(t, []string{p.ID, fresh.ID}, ids)
	})
}

// onPipeline runs fn before the nth pipeline its client sends (n from 1),
// once, and before every pipeline while every is set.
type onPipeline struct {
	n, seen atomic.Int64
	every   atomic.Bool
	fn      func()
}

func (h *onPipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *onPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *onPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.seen.Add(1) == h.n.Load() || h.every.Load() {
			h.fn()
		}
		return next(ctx, cmds)
	}
}

// TestShardReserveLate: a sharded reservation chooses its shard from a
// peek of every shard, then reads the fleet (two pipelines), then calls
// that shard; when the call comes more than shardLeaseWindow after the
// peek, a level 2 task enqueued meanwhile in another shard had been
// pending past the inversion bound, so the late call leases nothing and
// the reservation is made again from fresh views: it takes the level 2
// task, not the level 1 one the first peek chose.
func TestShardReserveLate(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e, h, other, victim := reserveEnv(t, b, "reserve")
		e.enqueueIn(0, 3, 1, "mid")

		var top *Task
		h.n.Store(h.seen.Load() + 2) // the reservation's first fleet read, after its peek
		h.fn = func() {
			top = NewTask("t", nil)
			top.ID = idIn(1, 3, "top")
			_, err := other.Enqueue(e.ctx, top, Level(2))
			require.NoError(t, err)
			e.clk.Advance(shardLeaseWindow + 3*time.Millisecond)
		}
		got, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w", VictimID: victim.ID, VictimLevel: 0,
			MinLevel: 1, MaxPreemptions: -1})
		require.NoError(t, err)
		require.NotNil(t, top, "the hook ran")
		require.Equal(t, top.ID, got.ID, "the late call leased nothing; the next chose the level 2 task")
	})
}

// TestShardLeasePushedBack: a preempted task that comes back to the head
// of level 1 in shard 1 after this worker's views were read takes the slot
// the allocation gave shard 1's fresh level 1 task; the round stops before
// its level 0 wave (passedOver) and the next round takes the fresh level 1
// task, so no level 0 task is leased while it waits (without the stop,
// the lease took a level 0 task of shard 0 beside the resumed one).
func TestShardLeasePushedBack(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		other, err := New(e.rdb, e.c.cfg)
		require.NoError(t, err)
		r := e.enqueueIn(1, 3, 1, "resumed")
		res, err := other.Lease(e.ctx, LeaseRequest{Worker: "o", Count: 1})
		require.NoError(t, err)
		require.Equal(t, r.ID, res.Tasks[0].ID)
		fresh := e.enqueueIn(1, 3, 1, "fresh")
		e.enqueueIn(0, 3, 0, "low")
		_, _, err = e.c.viewsOf(e.ctx, 0, nil) // this worker's views: fresh, the clock stands still
		require.NoError(t, err)
		require.NoError(t, other.Requeue(e.ctx, res.Tasks[0], RequeuePreempted))

		got := e.lease("w", 2)
		ids := []string{}
		for _, tk := range got {
			ids = append(ids, tk.ID)
		}
		require.ElementsMatch(t, []string{r.ID, fresh.ID}, ids, "both level 1 tasks, no level 0 one")
	})
}

// TestShardHeartbeatPartial: a heartbeat on a queue of several shards
// whose shard 1 does not answer (its master down) still extends the
// leases of the others and reports their lost ones, and says which shard
// it missed (Unreached); so does one whose shard 0 (capacity, counts,
// pauses) does not answer, saying it has no fleet-wide part (NoFleet);
// one no shard answers fails. Before, any shard's error failed the
// heartbeat, and the runtime took it for an outage of Redis; later, shard
// 0's alone still did, and the other shards' lost leases went unreported.
func TestShardHeartbeatPartial(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		h := &refuseShard{sha: heartbeatScript.Hash(), src: luaSource("heartbeat.lua")}
		e := hookedEnv(t, b, h, "heartbeat")
		var held []*Task
		for k := range 3 {
			e.enqueueIn(k, 3, 0, fmt.Sprint("t", k))
		}
		held = e.lease("w", 3)
		require.Len(t, held, 3)
		bad := make([]*Task, 0, 3) // shard 2's lease reported with a stale token: lost
		for _, tk := range held {
			if shardIndex(tk.ID, 3) == 2 {
				c := *tk
				c.Token = "stale"
				tk = &c
			}
			bad = append(bad, tk)
		}
		deadline := func(k int, id string) float64 {
			s := e.c.shards[k]
			v, err := e.rdb.ZScore(e.ctx, s.keys.prefix+"leases", id).Result()
			require.NoError(t, err)
			return v
		}
		before := map[string]float64{}
		for _, tk := range held {
			before[tk.ID] = deadline(shardIndex(tk.ID, 3), tk.ID)
		}

		h.prefix, _ = e.c.shards[1].keys.prefix, h.on.Swap(true)
		e.clk.Advance(time.Second)
		reply, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 3, Leases: bad})
		require.NoError(t, err)
		require.Positive(t, h.hits.Load())
		require.ErrorContains(t, reply.Unreached, "shard 1")
		for _, tk := range held {
			switch k := shardIndex(tk.ID, 3); k {
			case 0:
				require.Greater(t, deadline(k, tk.ID), before[tk.ID], "shard 0's lease extended")
			case 1:
				require.Equal(t, before[tk.ID], deadline(k, tk.ID), "shard 1 did not answer")
			case 2:
				require.Equal(t, []string{tk.ID}, reply.Lost, "shard 2's lost lease reported")
			}
		}

		require.False(t, reply.NoFleet, "shard 0 answered")

		h.prefix = e.c.shards[0].keys.prefix
		for _, tk := range held {
			before[tk.ID] = deadline(shardIndex(tk.ID, 3), tk.ID)
		}
		e.clk.Advance(time.Second)
		reply, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 3, Leases: bad})
		require.NoError(t, err, "the other shards answered")
		require.True(t, reply.NoFleet, "shard 0 holds the fleet-wide part")
		require.ErrorContains(t, reply.Unreached, "shard 0")
		require.Empty(t, reply.Paused)
		for _, tk := range held {
			switch k := shardIndex(tk.ID, 3); k {
			case 0:
				require.Equal(t, before[tk.ID], deadline(k, tk.ID), "shard 0 did not answer")
			case 1:
				require.Greater(t, deadline(k, tk.ID), before[tk.ID], "shard 1's lease extended")
			case 2:
				require.Equal(t, []string{tk.ID}, reply.Lost, "shard 2's lost lease reported")
			}
		}

		h.prefix = "" // every shard refuses
		reply, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 3, Leases: held})
		require.Error(t, err, "no shard answered")
		require.Nil(t, reply)
	})
}

// TestShardEnqueueElsewhere: while shard 1's master cannot be reached,
// an Enqueue whose ID it makes lands in another shard under a new ID, so
// do such tasks of an EnqueueBatch, and nothing is written twice; an Enqueue with the
// caller's ID in shard 1, or a unique task whose lock lives there, fails
// with the connection's error (its shard is its ID's or its lock's).
func TestShardEnqueueElsewhere(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		r := testredis.NewRefuser(ShardTag(b.Prefix+".elsewhere", "q", 1))
		e := hookedEnv(t, b, r, "elsewhere")
		r.Set(true)
		const single = 30 // one at a time: round the shards (fillShard)
		for i := range single {
			tk, err := e.c.Enqueue(e.ctx, NewTask("t", []byte(fmt.Sprint(i))))
			require.NoError(t, err, "task %d", i)
			require.NotEqual(t, 1, shardIndex(tk.ID, 3), "a made ID in a shard that answers")
		}
		require.Positive(t, r.Hits(), "shard 1 was tried")
		n, err := e.rdb.LLen(e.ctx, e.c.shards[0].keys.prefix+"p:0").Result()
		require.NoError(t, err)
		m, err := e.rdb.LLen(e.ctx, e.c.shards[2].keys.prefix+"p:0").Result()
		require.NoError(t, err)
		require.EqualValues(t, single, n+m, "every task once")

		hits := r.Hits()
		batch := make([]*Task, 30)
		for i := range batch {
			batch[i] = NewTask("t", []byte(fmt.Sprint("b", i)))
		}
		batch[7].ID = idIn(1, 3, "caller")
		stored, err := e.c.EnqueueBatch(e.ctx, batch)
		var op *net.OpError
		require.ErrorAs(t, err, &op, "the caller's ID in shard 1 fails")
		require.ErrorContains(t, err, "task 7 ")
		for i, tk := range stored {
			if i == 7 {
				require.Nil(t, tk)
				continue
			}
			require.NotNil(t, tk, "task %d", i)
			require.NotEqual(t, 1, shardIndex(tk.ID, 3), "task %d in a shard that answers", i)
		}
		n, err = e.rdb.LLen(e.ctx, e.c.shards[0].keys.prefix+"p:0").Result()
		require.NoError(t, err)
		m, err = e.rdb.LLen(e.ctx, e.c.shards[2].keys.prefix+"p:0").Result()
		require.NoError(t, err)
		require.Greater(t, r.Hits(), hits, "the batch tried shard 1")
		require.EqualValues(t, single+len(batch)-1, n+m, "every batched task once")

		mine := NewTask("t", nil)
		mine.ID = idIn(1, 3, "mine")
		_, err = e.c.Enqueue(e.ctx, mine)
		require.ErrorAs(t, err, &op, "the caller's ID lives in shard 1")

		for i := 0; ; i++ {
			u := NewTask("u", []byte(fmt.Sprint(i)))
			if e.c.home(&Task{Info: u.Info, unique: time.Minute}) != 1 {
				continue
			}
			_, err = e.c.Enqueue(e.ctx, u, Unique(time.Minute))
			require.ErrorAs(t, err, &op, "a unique task's lock lives in shard 1")
			break
		}

		r.Set(false)
		got, err := e.c.Enqueue(e.ctx, mine)
		require.NoError(t, err)
		require.Equal(t, mine.ID, got.ID)
	})
}

// TestShardReserveTakenLevel: a sharded reservation leases only the level
// its peek chose, or above. Shard 0 alone holds a level 2 task when the
// reservation peeks, and a level 1 one; before its call another worker
// takes that level 2 task and a level 2 task comes to shard 1. The call
// in shard 0 then takes nothing (not the level 1 task in its place) and
// the reservation, made again from fresh views, takes shard 1's level 2
// task. Before, the level 1 task was taken while shard 1's waited (an
// inversion TestShardedStrictOrder found under load).
func TestShardReserveTakenLevel(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e, h, other, victim := reserveEnv(t, b, "taken")
		e.enqueueIn(0, 3, 1, "mid")
		e.enqueueIn(0, 3, 2, "first")

		var second *Task
		h.n.Store(h.seen.Load() + 2) // the reservation's first fleet read, after its peek
		h.fn = func() {
			res, err := other.Lease(e.ctx, LeaseRequest{Worker: "o", Count: 1, MinLevel: 2})
			require.NoError(t, err)
			require.Len(t, res.Tasks, 1, "the other worker takes shard 0's level 2 task")
			second = NewTask("t", nil)
			second.ID = idIn(1, 3, "second")
			_, err = other.Enqueue(e.ctx, second, Level(2))
			require.NoError(t, err)
		}
		got, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w", VictimID: victim.ID, VictimLevel: 0,
			MinLevel: 1, MaxPreemptions: -1})
		require.NoError(t, err)
		require.NotNil(t, second, "the hook ran")
		require.Equal(t, second.ID, got.ID, "shard 1's level 2 task, not shard 0's level 1 one")
	})
}

// reserveEnv is a reservation's setting for the tests above: a hooked
// env on 3 shards, another worker's Store, and the victim, a level 0 task
// of shard 2 leased by worker "w" of capacity 1 (heartbeated).
func reserveEnv(t *testing.T, b testredis.Backend, tag string) (*env, *onPipeline, *Store, *Task) {
	h := &onPipeline{}
	e := hookedEnv(t, b, h, tag)
	other, err := New(e.rdb, e.c.cfg)
	require.NoError(t, err)
	e.enqueueIn(2, 3, 0, "low")
	victim := e.lease("w", 1)
	require.Len(t, victim, 1)
	_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1, Leases: victim})
	require.NoError(t, err)
	return e, h, other, victim[0]
}

// TestShardLeaseAllLate: when every round of a sharded lease comes too
// late (each peek's views are older than shardLeaseWindow by the time its
// calls would go: a loaded machine), the lease returns nothing, and its
// NextDue says to look again at once: the task is pending, and no wake-up
// will announce it again. Before, NextDue was zero, and the runtime waited
// for its next poll.
func TestShardLeaseAllLate(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		h := &onPipeline{}
		e := hookedEnv(t, b, h, "alllate")
		h.fn = func() { e.clk.Advance(shardLeaseWindow + time.Millisecond) }
		task := e.enqueueIn(1, 3, 1, "pending")

		h.every.Store(true)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
		h.every.Store(false)
		require.NoError(t, err)
		require.Empty(t, res.Tasks, "every round came late")
		require.False(t, res.NextDue.IsZero(), "a late lease asks to be made again")
		require.False(t, res.NextDue.After(e.clk.Now()), "at once")

		got := e.lease("w", 1)
		require.Len(t, got, 1)
		require.Equal(t, task.ID, got[0].ID)
	})
}
