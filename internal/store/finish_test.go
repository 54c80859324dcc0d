package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

func TestRequeue(t *testing.T) {
	cases := []struct {
		why         RequeueReason
		preemptions int
	}{
		{RequeuePreempted, 1},
		{RequeueShutdown, 0},
		{RequeueYield, 0},
	}
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, tc := range cases {
			t.Run(string(tc.why), func(t *testing.T) {
				e := newEnv(t, b, nil)
				e.enqueue("", ID("a"), Level(1))
				// One failed attempt first, so that Attempt is not trivially 0.
				tk := e.leaseOne("w")
				require.NoError(t, e.c.Retry(e.ctx, tk, e.clk.Now(), "first"))
				tk = e.leaseOne("w")
				e.enqueue("", ID("b"), Level(1))
				e.enqueue("", ID("c"), Level(1))
				_, err := e.c.SaveCheckpoint(e.ctx, "a", tk.Token, []byte("cursor=7"))
				require.NoError(t, err)
				require.Equal(t, []string{"a"}, e.zset(e.c.keys.running()))
				e.requireCounts(counts{}, counts{Pending: 2, Active: 1})

				e.clk.Advance(time.Second)
				require.NoError(t, e.c.Requeue(e.ctx, tk, tc.why))
				require.Equal(t, []string{"a", "b", "c"}, e.pending(1), "back at the head of its level")
				rec := e.inspect("a")
				require.Equal(t, StatePending, rec.State)
				require.Equal(t, tc.preemptions, rec.Preemptions)
				require.Equal(t, 1, rec.Attempt, "a requeue is not a failed attempt")
				require.Equal(t, []byte("cursor=7"), rec.Checkpoint)
				require.Equal(t, int64(1), rec.CheckpointSeq)
				require.True(t, rec.ReadyAt.Equal(e.clk.Now()))
				require.Empty(t, rec.Token)
				require.Empty(t, rec.Worker)
				require.Empty(t, e.zset(e.c.keys.leases()))
				require.Empty(t, e.zset(e.c.keys.running()))
				require.Empty(t, e.rdb.HGet(e.ctx, e.c.keys.busy(), "w").Val(), "an unregistered worker that holds nothing has no busy field")
				e.requireCounts(counts{}, counts{Pending: 3})
				requireLeaseLost(t, e.c.Requeue(e.ctx, tk, tc.why))

				again := e.leaseOne("w2")
				require.Equal(t, "a", again.ID)
				require.Equal(t, []byte("cursor=7"), again.Checkpoint)
				require.Equal(t, tc.preemptions, again.Preemptions)
			})
		}
	})
}

func TestRetry(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("a"), Level(2))
		tk := e.leaseOne("w")
		_, err := e.c.SaveCheckpoint(e.ctx, "a", tk.Token, []byte("cp"))
		require.NoError(t, err)
		at := e.clk.Now().Add(5 * time.Second)
		require.NoError(t, e.c.Retry(e.ctx, tk, at, "boom"))

		rec := e.inspect("a")
		require.Equal(t, StateRetry, rec.State)
		require.Equal(t, 1, rec.Attempt)
		require.Equal(t, "boom", rec.LastError)
		require.True(t, rec.ProcessAt.Equal(at))
		require.Empty(t, rec.Token)
		require.Equal(t, []string{"a"}, e.zset(e.c.keys.scheduled()))
		require.Equal(t, float64(at.UnixMilli()), e.score(e.c.keys.scheduled(), "a"))
		require.Empty(t, e.zset(e.c.keys.leases()))
		e.requireCounts(counts{}, counts{}, counts{Scheduled: 1})
		requireLeaseLost(t, e.c.Ack(e.ctx, tk))

		e.clk.Advance(5*time.Second - time.Millisecond)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w"})
		require.NoError(t, err)
		require.Empty(t, res.Tasks)
		require.True(t, res.NextDue.Equal(at), "NextDue %v, want %v", res.NextDue, at)
		e.enqueue("", ID("b"), Level(2))
		require.Equal(t, []string{"b"}, e.pending(2), "not promoted before due")

		e.clk.Advance(time.Millisecond)
		require.Equal(t, []string{"b", "a"}, ids(e.lease("w", 2)), "promoted to the tail of its level")
		e.requireCounts(counts{}, counts{}, counts{Active: 2})
		rec = e.inspect("a")
		require.Equal(t, StateActive, rec.State)
		require.Equal(t, 1, rec.Attempt)
		require.Equal(t, "boom", rec.LastError)
		require.Equal(t, []byte("cp"), rec.Checkpoint, "checkpoint survives a retry")
		require.True(t, rec.ReadyAt.Equal(at))
	})
}

func TestDeadLetter(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("low"), Level(0))
		e.enqueue("", ID("high1"), Level(2))
		e.enqueue("", ID("high2"), Level(2))
		for _, tk := range e.lease("w", 3) {
			require.NoError(t, e.c.DeadLetter(e.ctx, tk, "reason "+tk.ID))
			requireLeaseLost(t, e.c.DeadLetter(e.ctx, tk, "again"))
			e.clk.Advance(time.Second)
		}
		e.requireCounts(counts{Dead: 1}, counts{}, counts{Dead: 2})
		require.Empty(t, e.zset(e.c.keys.leases()))

		dead, err := e.c.DeadTasks(e.ctx, 0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"high1", "high2", "low"}, ids(dead), "oldest first")
		for _, d := range dead {
			require.Equal(t, StateDead, d.State)
			require.Equal(t, "reason "+d.ID, d.LastError)
			require.Equal(t, 1, d.Attempt)
		}
		page, err := e.c.DeadTasks(e.ctx, 1, 1)
		require.NoError(t, err)
		require.Equal(t, []string{"high2"}, ids(page))

		// A dead ID stays taken.
		_, err = e.c.Enqueue(e.ctx, NewTask("t", nil), ID("low"))
		require.ErrorIs(t, err, ErrDuplicateTask)
		// A dead entry whose record vanished is skipped.
		require.NoError(t, e.rdb.Del(e.ctx, e.c.keys.task("high2")).Err())
		dead, err = e.c.DeadTasks(e.ctx, 0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"high1", "low"}, ids(dead))
	})
}

func TestAckWithoutRetention(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("a"), Level(1))
		tk := e.leaseOne("w")
		_, err := e.c.SaveCheckpoint(e.ctx, "a", tk.Token, []byte("cp"))
		require.NoError(t, err)
		require.NoError(t, e.c.Ack(e.ctx, tk))
		e.gone("a")
		requireLeaseLost(t, e.c.Ack(e.ctx, tk))
		require.Empty(t, e.zset(e.c.keys.leases()))
		require.Empty(t, e.zset(e.c.keys.running()))
		require.Empty(t, e.zset(e.c.keys.done()))
		e.requireCounts()
		e.enqueue("", ID("a")) // the ID is free again
	})
}

func TestAckWithRetention(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Retention = time.Minute })
		e.enqueue("", ID("a"), Level(1))
		tk := e.leaseOne("w")
		_, err := e.c.SaveCheckpoint(e.ctx, "a", tk.Token, []byte("cp"))
		require.NoError(t, err)
		require.NoError(t, e.c.Ack(e.ctx, tk))

		rec := e.inspect("a")
		require.Equal(t, StateDone, rec.State)
		require.Nil(t, rec.Checkpoint, "checkpoint deleted when done")
		require.Empty(t, rec.Token)
		require.Equal(t, float64(e.clk.Now().Add(time.Minute).UnixMilli()), e.score(e.c.keys.done(), "a"))
		require.Empty(t, e.zset(e.c.keys.leases()))
		e.requireCounts()
		requireLeaseLost(t, e.c.Ack(e.ctx, tk))
		_, err = e.c.Enqueue(e.ctx, NewTask("t", nil), ID("a"))
		require.ErrorIs(t, err, ErrDuplicateTask, "rejected while retained")

		// Still retained just before the end; expired by the next ack after.
		e.clk.Advance(time.Minute - time.Millisecond)
		e.enqueue("", ID("b"))
		require.NoError(t, e.c.Ack(e.ctx, e.leaseOne("w")))
		require.Equal(t, StateDone, e.inspect("a").State)
		e.clk.Advance(time.Millisecond)
		e.enqueue("", ID("c"))
		require.NoError(t, e.c.Ack(e.ctx, e.leaseOne("w")))
		e.gone("a")
		require.Equal(t, []string{"b", "c"}, e.zset(e.c.keys.done()))
		e.enqueue("", ID("a"))
	})
}

// An idle queue has no acks: the heartbeat expires retained records.
func TestRetentionExpiresOnHeartbeat(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Retention = time.Minute })
		e.enqueue("", ID("a"))
		require.NoError(t, e.c.Ack(e.ctx, e.leaseOne("w")))
		_, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1})
		require.NoError(t, err)
		require.Equal(t, StateDone, e.inspect("a").State, "kept while retained")
		e.clk.Advance(time.Minute)
		_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1})
		require.NoError(t, err)
		e.gone("a")
		require.Empty(t, e.zset(e.c.keys.done()))
		e.enqueue("", ID("a")) // the ID is free again
	})
}

func TestCheckpoint(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.MaxCheckpointBytes = 8 })
		e.enqueue("", ID("a"))
		tk := e.leaseOne("w")
		for i, cp := range []string{"one", "two", "12345678"} {
			e.clk.Advance(10 * time.Second)
			seq, err := e.c.SaveCheckpoint(e.ctx, "a", tk.Token, []byte(cp))
			require.NoError(t, err)
			require.Equal(t, int64(i+1), seq)
			// Saving is a sign of life: the lease is extended.
			dl := e.clk.Now().Add(defaultLeaseDuration)
			require.Equal(t, float64(dl.UnixMilli()), e.score(e.c.keys.leases(), "a"))
			require.True(t, e.inspect("a").LeaseDeadline.Equal(dl))
		}
		before := e.inspect("a")
		_, err := e.c.SaveCheckpoint(e.ctx, "a", tk.Token, []byte("123456789"))
		require.ErrorIs(t, err, ErrCheckpointTooLarge)
		require.Equal(t, before, e.inspect("a"))
		require.Equal(t, []byte("12345678"), before.Checkpoint)
		require.Equal(t, int64(3), before.CheckpointSeq)

		// 40 s after the lease began it is alive thanks to the saves.
		e.clk.Advance(defaultLeaseDuration - time.Millisecond)
		require.Empty(t, e.lease("w2", 1))
		require.NoError(t, e.c.Requeue(e.ctx, tk, RequeuePreempted))
		next := e.leaseOne("w2")
		require.Equal(t, []byte("12345678"), next.Checkpoint)
		require.Equal(t, int64(3), next.CheckpointSeq)
		seq, err := e.c.SaveCheckpoint(e.ctx, "a", next.Token, nil)
		require.NoError(t, err)
		require.Equal(t, int64(4), seq)
		require.Empty(t, e.inspect("a").Checkpoint)

		_, err = e.c.SaveCheckpoint(e.ctx, "a", tk.Token, []byte("old"))
		requireLeaseLost(t, err)
		_, err = e.c.SaveCheckpoint(e.ctx, "missing", tk.Token, []byte("x"))
		requireLeaseLost(t, err)

		unlimited := newEnv(t, b, func(c *Config) { c.MaxCheckpointBytes = -1 })
		unlimited.enqueue("", ID("u"))
		ut := unlimited.leaseOne("w")
		_, err = unlimited.c.SaveCheckpoint(unlimited.ctx, "u", ut.Token, make([]byte, defaultMaxPayloadBytes+1))
		require.NoError(t, err)
	})
}

// Two ops on one lease in one batch of the general path (with retention,
// or a retry beside an ack) end it once: the second is told the lease is
// gone, and the counts drop once.
func TestFinishBatchOneLeaseTwice(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Retention = time.Hour })
		e.enqueue("", ID("a"), Level(1))
		e.enqueue("", ID("b"), Level(1))
		got := e.lease("w", 2)
		errs := e.c.finishBatch(e.ctx, []finishOp{{t: got[0], mode: "ack"}, {t: got[0], mode: "retry", a: int64(0), b: "again"}})
		require.NoError(t, errs[0])
		requireLeaseLost(t, errs[1])
		require.Equal(t, StateDone, e.inspect("a").State, "the first op stands")
		require.Equal(t, "1", e.rdb.HGet(e.ctx, e.c.keys.busy(), "w").Val())
		e.requireCounts(counts{}, counts{Active: 1})
	})
}

// A retry that becomes the earliest due task is announced on the wake
// channel ("s"), as a delayed enqueue is, so idle workers learn its due
// time; one behind an earlier due task is not.
func TestRetryAtHeadAnnounced(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("a")
		e.enqueue("b")
		got := e.lease("w", 2)
		require.Len(t, got, 2)
		sub := e.rdb.Subscribe(e.ctx, e.c.WakeChannel())
		defer sub.Close()
		_, err := sub.Receive(e.ctx)
		require.NoError(t, err)
		next := func() string {
			msg, err := sub.ReceiveMessage(e.ctx)
			require.NoError(t, err)
			return msg.Payload
		}

		require.NoError(t, e.c.Retry(e.ctx, got[0], e.clk.Now().Add(time.Second), "boom"))
		require.Equal(t, "s", next(), "the retry at the head was not announced")
		require.NoError(t, e.c.Retry(e.ctx, got[1], e.clk.Now().Add(time.Hour), "boom"))
		require.NoError(t, e.rdb.Publish(e.ctx, e.c.WakeChannel(), "marker").Err())
		require.Equal(t, "marker", next(), "a retry behind an earlier one was announced")
	})
}
