package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// A preemption writes three feed events: the reservation, the victim's
// requeue and its resume; ordinary tasks write none.
func TestPreemptionFeed(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		feedLen := func() int64 { return e.rdb.XLen(e.ctx, e.c.keys.prefix+"feed").Val() }
		plain := e.enqueue("plain", Level(1))
		require.NoError(t, e.c.Ack(e.ctx, e.leaseOne("w")))
		require.Zero(t, feedLen(), "an ordinary task writes nothing")
		_ = plain

		v := e.run("w", "victim", 0)
		_, err := e.c.SaveCheckpoint(e.ctx, v.ID, v.Token, []byte("cp"))
		require.NoError(t, err)
		e.beat("w", 1, 0, v)
		urgent := e.enqueue("urgent", Level(2))
		e.clk.Advance(40 * time.Millisecond)
		got, _, err := e.c.Reserve(e.ctx, ReserveRequest{Worker: "w", VictimID: v.ID, VictimLevel: 0, MinLevel: 1, MaxPreemptions: -1})
		require.NoError(t, err)
		require.Equal(t, urgent.ID, got.ID)
		e.clk.Advance(10 * time.Millisecond)
		require.NoError(t, e.c.Requeue(e.ctx, v, RequeuePreempted))
		require.NoError(t, e.c.Ack(e.ctx, got))
		again := e.leaseOne("w2")
		require.Equal(t, v.ID, again.ID)

		evs, err := e.c.Preemptions(e.ctx, "", 10)
		require.NoError(t, err)
		require.Len(t, evs, 3)
		require.Equal(t, []FeedKind{FeedPreempt, FeedGaveWay, FeedResumed}, []FeedKind{evs[0].Kind, evs[1].Kind, evs[2].Kind})
		p := evs[0]
		require.Equal(t, []any{urgent.ID, 2, v.ID, 0, "w", 40 * time.Millisecond},
			[]any{p.ID, p.Level, p.Victim, p.VictimLevel, p.Worker, p.Waited})
		require.True(t, p.At.Equal(e.clk.Now().Add(-10*time.Millisecond)), "%v", p.At)
		g := evs[1]
		require.Equal(t, []any{v.ID, "w", int64(1)}, []any{g.ID, g.Worker, g.CheckpointSeq})
		require.Equal(t, 50*time.Millisecond, g.Ran)
		r := evs[2]
		require.Equal(t, []any{v.ID, "w2", 1, int64(1)}, []any{r.ID, r.Worker, r.Preemptions, r.CheckpointSeq})

		rest, err := e.c.Preemptions(e.ctx, evs[0].Seq, 10)
		require.NoError(t, err)
		require.Equal(t, evs[1:], rest)
		_, err = e.c.Preemptions(e.ctx, "", 0)
		require.ErrorIs(t, err, ErrInvalidTask)
	})
}
