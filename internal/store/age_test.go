package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// Tests of aging (Config.AgeAfter): a pending task that waited long enough
// moves to the tail of the next level up, in lease and heartbeat calls.

const ageAfter = 10 * time.Second

func withAging(levels int) func(*Config) {
	return func(c *Config) { c.Levels, c.AgeAfter = levels, ageAfter }
}

// tick sends an empty heartbeat: it ages tasks without leasing any.
func (e *env) tick() {
	e.t.Helper()
	_, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "hb", Capacity: 1})
	require.NoError(e.t, err)
}

// starve feeds two high tasks per round to a worker that runs one task at a
// time, advancing the clock a second per round, and returns the round in
// which the low task was leased (0 if it never was) and the leased record.
func starve(e *env, low string, rounds int) (int, *Task) {
	e.t.Helper()
	for i := 1; i <= rounds; i++ {
		e.enqueue("", Level(2))
		e.enqueue("", Level(2))
		tk := e.leaseOne("w")
		if tk.ID == low {
			return i, tk
		}
		require.Equal(e.t, 2, tk.Level)
		require.NoError(e.t, e.c.Ack(e.ctx, tk))
		e.clk.Advance(time.Second)
	}
	return 0, nil
}

func TestAgeLowNeverStarves(t *testing.T) {
	// On a queue of three shards too: each shard ages its own tasks, and
	// the lease's allocation across shards sees the aged level.
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprint("shards=", shards), func(t *testing.T) {
			parallelBackends(t, func(t *testing.T, b testredis.Backend) {
				e := newEnv(t, b, func(c *Config) { withAging(3)(c); c.Shards = shards })
				e.enqueue("low", ID("low"), Level(0))
				round, tk := starve(e, "low", 200)
				require.NotZero(t, round, "the low task never ran under a stream of high tasks")
				// Two agings (20 s) plus the high backlog ahead of it at the top.
				require.Greater(t, round, 20)
				require.Equal(t, 2, tk.Level)
				require.Equal(t, 0, tk.OriginalLevel)
				require.False(t, tk.AgedAt.IsZero())
			})
		})
	}
}

func TestAgeDisabledByDefault(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Levels = 3 })
		require.Zero(t, e.c.Config().AgeAfter)
		e.enqueue("low", ID("low"), Level(0))
		round, _ := starve(e, "low", 60)
		require.Zero(t, round, "without aging the low task waits behind every high one")
		e.clk.Advance(time.Hour)
		e.tick()
		require.Equal(t, []string{"low"}, e.pending(0))
		tk := e.inspect("low")
		require.Equal(t, 0, tk.Level)
		require.Equal(t, 0, tk.OriginalLevel)
		require.True(t, tk.AgedAt.IsZero())
	})
}

func TestAgeMovesToTailUpToTop(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, withAging(3))
		t0 := e.clk.Now()
		e.enqueue("", ID("n1"), Level(1))
		e.enqueue("", ID("n2"), Level(1))
		e.enqueue("", ID("l1"), Level(0))
		e.clk.Advance(ageAfter / 2)
		e.enqueue("", ID("n3"), Level(1))

		sub := e.rdb.Subscribe(e.ctx, e.c.WakeChannel())
		defer sub.Close()
		_, err := sub.Receive(e.ctx)
		require.NoError(t, err)

		e.clk.Advance(ageAfter/2 - time.Millisecond)
		e.tick()
		require.Equal(t, []string{"l1"}, e.pending(0), "not yet")
		e.clk.Advance(time.Millisecond)
		e.tick()
		require.Equal(t, []string{"n1", "n2"}, e.pending(2))
		require.Equal(t, []string{"n3", "l1"}, e.pending(1), "tail of the next level, behind n3")
		require.Empty(t, e.pending(0))
		for _, want := range []string{"2", "1"} { // one wake per level that received tasks
			msg, err := sub.ReceiveMessage(e.ctx)
			require.NoError(t, err)
			require.Equal(t, want, msg.Payload)
		}
		l1 := e.inspect("l1")
		require.Equal(t, StatePending, l1.State)
		require.Equal(t, 1, l1.Level)
		require.Equal(t, 0, l1.OriginalLevel)
		require.True(t, l1.AgedAt.Equal(e.clk.Now()))
		require.True(t, l1.ReadyAt.Equal(t0), "ReadyAt (the wait) is unchanged")

		// n3 ages 10 s after its enqueue, l1 10 s after its first aging.
		e.clk.Advance(ageAfter / 2)
		e.tick()
		require.Equal(t, []string{"n1", "n2", "n3"}, e.pending(2))
		require.Equal(t, []string{"l1"}, e.pending(1))
		e.clk.Advance(ageAfter / 2)
		e.tick()
		require.Equal(t, []string{"n1", "n2", "n3", "l1"}, e.pending(2))

		// The top level is as far as it goes.
		e.clk.Advance(10 * ageAfter)
		e.tick()
		require.Equal(t, []string{"n1", "n2", "n3", "l1"}, e.pending(2))
		l1 = e.inspect("l1")
		require.Equal(t, 2, l1.Level)
		require.Equal(t, 0, l1.OriginalLevel, "the first level is kept")
		e.requireCounts(counts{}, counts{}, counts{Pending: 4})
		require.Equal(t, []string{"n1", "n2", "n3", "l1"}, ids(e.lease("w", 4)))
	})
}

func TestAgeInLease(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, withAging(3))
		e.enqueue("", ID("low"), Level(0))
		e.clk.Advance(ageAfter)
		e.enqueue("", ID("high"), Level(2))
		require.Equal(t, "high", e.leaseOne("w").ID)
		require.Equal(t, []string{"low"}, e.pending(1), "the lease call aged it")
		require.Empty(t, e.pending(0))
	})
}

// TestAgeCounters follows an aged task through lease, requeue, retry and
// ack: it stays at the level it reached, and every counter follows it.
func TestAgeCounters(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, withAging(3))
		e.enqueue("", ID("a"), Level(0))
		e.enqueue("", ID("b"), Level(0))
		e.requireCounts(counts{Pending: 2})
		e.clk.Advance(ageAfter)
		e.tick()
		e.requireCounts(counts{}, counts{Pending: 2})

		tk := e.leaseOne("w")
		require.Equal(t, "a", tk.ID)
		require.Equal(t, 1, tk.Level)
		require.Equal(t, 0, tk.OriginalLevel)
		e.requireCounts(counts{}, counts{Pending: 1, Active: 1})
		require.Equal(t, float64(1), e.score(e.c.keys.running(), "a"), "the fleet sees the level it runs at")

		// The other one keeps aging while a runs; a running task does not.
		e.clk.Advance(ageAfter)
		e.tick()
		e.requireCounts(counts{}, counts{Active: 1}, counts{Pending: 1})
		require.Equal(t, 1, e.inspect("a").Level)

		require.NoError(t, e.c.Requeue(e.ctx, tk, RequeuePreempted))
		require.Equal(t, []string{"a"}, e.pending(1), "requeued at the head of its level")
		e.requireCounts(counts{}, counts{Pending: 1}, counts{Pending: 1})
		e.tick() // its wait starts again at the requeue
		require.Equal(t, []string{"a"}, e.pending(1))

		require.Equal(t, "b", e.leaseOne("w").ID)
		tk = e.leaseOne("w")
		require.Equal(t, "a", tk.ID)
		require.NoError(t, e.c.Retry(e.ctx, tk, e.clk.Now().Add(time.Second), "boom"))
		e.requireCounts(counts{}, counts{Scheduled: 1}, counts{Active: 1})
		e.clk.Advance(time.Second)
		tk = e.leaseOne("w")
		require.Equal(t, "a", tk.ID)
		require.Equal(t, 1, tk.Level)
		e.requireCounts(counts{}, counts{Active: 1}, counts{Active: 1})
		require.NoError(t, e.c.DeadLetter(e.ctx, tk, "dead"))
		e.requireCounts(counts{}, counts{Dead: 1}, counts{Active: 1})
	})
}

func TestAgeBoundedPerCall(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, withAging(3))
		var low, mid []string
		for i := range 30 {
			low = append(low, e.enqueue("", ID(fmt.Sprint("l", i)), Level(0)).ID)
			mid = append(mid, e.enqueue("", ID(fmt.Sprint("m", i)), Level(1)).ID)
		}
		e.clk.Advance(ageAfter)
		// Two levels below the top: at most 10 moves from each per call.
		e.tick()
		require.Equal(t, mid[:10], e.pending(2))
		require.Equal(t, append(append([]string{}, mid[10:]...), low[:10]...), e.pending(1))
		require.Equal(t, low[10:], e.pending(0))
		e.tick()
		require.Equal(t, mid[:20], e.pending(2))
		require.Equal(t, append(append([]string{}, mid[20:]...), low[:20]...), e.pending(1))
		require.Equal(t, low[20:], e.pending(0))
		e.requireCounts(counts{Pending: 10}, counts{Pending: 30}, counts{Pending: 20})
		e.tick()
		e.tick()
		require.Equal(t, mid, e.pending(2))
		require.Equal(t, low, e.pending(1), "tasks that just aged wait another AgeAfter")
		require.Empty(t, e.pending(0))
	})
}

func TestAgeBoundedManyLevels(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, withAging(2))
		for i := range 50 {
			e.enqueue("", ID(fmt.Sprintf("t%02d", i)), Level(0))
		}
		e.clk.Advance(ageAfter)
		e.tick()
		require.Len(t, e.pending(1), 20, "one level below the top: 20 moves per call")
		require.Equal(t, "t20", e.pending(0)[0])
		e.tick()
		e.tick()
		require.Len(t, e.pending(1), 50)
		require.Equal(t, "t49", e.pending(1)[49])
	})
}

func TestAgeDropsMissingRecords(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, withAging(3))
		e.enqueue("", ID("ghost"), Level(0))
		e.enqueue("", ID("real"), Level(0))
		require.NoError(t, e.rdb.Del(e.ctx, e.c.keys.task("ghost")).Err())
		e.clk.Advance(ageAfter)
		e.tick()
		require.Empty(t, e.pending(0))
		require.Equal(t, []string{"real"}, e.pending(1))
	})
}

func TestAgeConfig(t *testing.T) {
	t.Parallel()
	b := testredis.Backends(t)[0]
	for _, d := range []time.Duration{-time.Second, time.Microsecond} {
		_, err := New(b.Client, Config{AgeAfter: d})
		require.ErrorContains(t, err, "AgeAfter")
	}
	_, err := New(b.Client, Config{AgeAfter: time.Millisecond})
	require.NoError(t, err)
}
