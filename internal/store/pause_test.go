package store

import (
	"maps"
	"slices"

	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

func TestPauseAndResume(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		sub := e.rdb.Subscribe(e.ctx, e.c.WakeChannel())
		defer sub.Close()
		_, err := sub.Receive(e.ctx)
		require.NoError(t, err)
		msgs := sub.Channel()

		require.NoError(t, e.c.Pause(e.ctx, 1, PauseWait))
		m, ok := e.c.PausedFromMessage((<-msgs).Payload)
		require.True(t, ok, "workers are told at once")
		require.Equal(t, map[int]PauseMode{1: PauseWait}, m)
		require.NoError(t, e.c.Pause(e.ctx, 2, PausePreempt))
		m, _ = e.c.PausedFromMessage((<-msgs).Payload)
		require.Equal(t, map[int]PauseMode{1: PauseWait, 2: PausePreempt}, m)
		p, err := e.c.Paused(e.ctx)
		require.NoError(t, err)
		require.Equal(t, map[int]PauseMode{1: PauseWait, 2: PausePreempt}, p)

		// A paused level still accepts tasks; Stats shows it paused; a
		// lease that skips it (as the runtime's do) takes the others.
		low, mid := e.enqueue("low", Level(0)), e.enqueue("mid", Level(1))
		require.Equal(t, []string{"0", "1"}, []string{(<-msgs).Payload, (<-msgs).Payload})
		st := e.stats()
		require.Equal(t, []PauseMode{NotPaused, PauseWait, PausePreempt},
			[]PauseMode{st.Levels[0].Paused, st.Levels[1].Paused, st.Levels[2].Paused})
		require.EqualValues(t, 1, st.Levels[1].Pending)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 5, Skip: slices.Sorted(maps.Keys(p))})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		require.Equal(t, low.ID, res.Tasks[0].ID)
		// A lease that does not know of the pause yet (a worker that has
		// not heard) takes nothing from the level either: the task goes
		// back to the head of its list, untouched.
		mid2 := e.enqueue("mid2", Level(1))
		res, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 5})
		require.NoError(t, err)
		require.Empty(t, res.Tasks)
		ids, err := e.c.Pending(e.ctx, 1)
		require.NoError(t, err)
		require.Equal(t, []string{mid.ID, mid2.ID}, ids)
		require.Equal(t, StatePending, e.inspect(mid.ID).State)

		// The heartbeat carries the paused levels to every worker.
		reply, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1})
		require.NoError(t, err)
		require.Equal(t, p, reply.Paused)

		require.NoError(t, e.c.Resume(e.ctx, 1))
		require.Equal(t, "p,2:p,", (<-msgs).Payload)
		require.Equal(t, "1", (<-msgs).Payload, "idle workers are woken for the resumed level")
		_, ok = e.c.PausedFromMessage("1")
		require.False(t, ok)
		p, err = e.c.Paused(e.ctx)
		require.NoError(t, err)
		require.Equal(t, map[int]PauseMode{2: PausePreempt}, p)
		require.Equal(t, mid.ID, e.leaseOne("w").ID)

		require.NoError(t, e.c.Pause(e.ctx, AllLevels, PauseWait))
		p, err = e.c.Paused(e.ctx)
		require.NoError(t, err)
		require.Equal(t, map[int]PauseMode{0: PauseWait, 1: PauseWait, 2: PauseWait}, p, "pausing again sets the mode")
		require.NoError(t, e.c.Resume(e.ctx, AllLevels))
		p, err = e.c.Paused(e.ctx)
		require.NoError(t, err)
		require.Empty(t, p)
		require.Zero(t, e.rdb.Exists(e.ctx, e.c.keys.paused()).Val(), "nothing paused: no key")
		reply, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1})
		require.NoError(t, err)
		require.Empty(t, reply.Paused)
	})
}

func TestPauseBadInput(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		require.ErrorIs(t, e.c.Pause(e.ctx, 3, PauseWait), ErrInvalidLevel)
		require.ErrorIs(t, e.c.Pause(e.ctx, -2, PauseWait), ErrInvalidLevel)
		require.ErrorIs(t, e.c.Resume(e.ctx, 7), ErrInvalidLevel)
		require.ErrorIs(t, e.c.Pause(e.ctx, 0, NotPaused), ErrInvalidTask)
		require.ErrorIs(t, e.c.Pause(e.ctx, 0, PauseMode(9)), ErrInvalidTask)

		// A wrong-typed key is reported as corruption and changes nothing.
		require.NoError(t, e.rdb.LPush(e.ctx, e.c.keys.paused(), "x").Err())
		require.ErrorIs(t, e.c.Pause(e.ctx, 0, PauseWait), ErrCorrupt)
		_, err := e.c.Paused(e.ctx)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Equal(t, "list", e.rdb.Type(e.ctx, e.c.keys.paused()).Val())
		// Stats and heartbeats go on, reading nothing as paused.
		st := e.stats()
		require.Equal(t, NotPaused, st.Levels[0].Paused)
		_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1})
		require.NoError(t, err)

		// Garbage in the string (a newer writer, a removed level) is skipped.
		require.NoError(t, e.rdb.Set(e.ctx, e.c.keys.paused(), ",1:w,9:p,x:y,2:z,", 0).Err())
		p, err := e.c.Paused(e.ctx)
		require.NoError(t, err)
		require.Equal(t, map[int]PauseMode{1: PauseWait}, p)
	})
}

func TestRatesFromHeartbeats(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		// Align the clock to the start of a bucket.
		now := e.clk.Now()
		e.clk.Advance(rateBucket - time.Duration(now.UnixMilli()%rateBucket.Milliseconds())*time.Millisecond)
		keys := func() []string { return e.rdb.Keys(e.ctx, e.c.keys.prefix+"r:*").Val() }

		_, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1})
		require.NoError(t, err)
		require.Empty(t, keys(), "an idle heartbeat writes no counter")

		for _, w := range []string{"w1", "w2"} {
			_, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: w, Capacity: 1, Counts: map[int]LevelCounts{
				0: {Processed: 30, Failed: 6}, 2: {Processed: 60, Preempted: 12, SLABreaches: 3}, 1: {}},
				PoolCounts: map[string]LevelCounts{"bulk": {Processed: 30, Failed: 6}, "bad name": {Processed: 1}}})
			require.NoError(t, err)
		}
		require.Len(t, keys(), 1)
		require.Positive(t, e.rdb.PTTL(e.ctx, keys()[0]).Val(), "buckets expire")
		require.Zero(t, e.stats().Levels[0].Rates, "the current bucket is not complete")

		e.clk.Advance(rateBucket)
		st := e.stats()
		require.Equal(t, Rates{Processed: 1, Failed: 0.2}, st.Levels[0].Rates) // 60 and 12 in 60 s
		require.Zero(t, st.Levels[1].Rates)
		require.Equal(t, Rates{Processed: 2, Preempted: 0.4, SLABreaches: 0.1}, st.Levels[2].Rates)
		require.Equal(t, map[string]Rates{"bulk": {Processed: 1, Failed: 0.2}}, st.PoolRates)

		e.clk.Advance(RateWindow)
		require.Zero(t, e.stats().Levels[2].Rates, "out of the window")

		// A wrong-typed bucket loses that heartbeat's counts, not the beat.
		k := e.c.keys.prefix + "r:" + strconv.FormatInt(e.clk.Now().UnixMilli()/rateBucket.Milliseconds(), 10)
		require.NoError(t, e.rdb.LPush(e.ctx, k, "x").Err())
		_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1, Counts: map[int]LevelCounts{0: {Processed: 1}}})
		require.NoError(t, err)
		e.clk.Advance(rateBucket)
		require.Zero(t, e.stats().Levels[0].Rates)
	})
}

// A pause is data in Redis: it survives Redis being killed and restarted
// with persistence (AOF), and holds for leases afterwards.
func TestPauseSurvivesRedisRestart(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{Persistent: true})
	rdb := srv.NewClient(t)
	e := newEnvOn(t, rdb, "restart", nil)
	require.NoError(t, e.c.Pause(e.ctx, 1, PausePreempt))
	e.enqueue("x", Level(1))
	require.NoError(t, srv.Kill())
	require.NoError(t, srv.Restart())
	p, err := e.c.Paused(e.ctx)
	require.NoError(t, err)
	require.Equal(t, map[int]PauseMode{1: PausePreempt}, p)
	res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 5})
	require.NoError(t, err)
	require.Empty(t, res.Tasks, "still paused after the restart")
}
