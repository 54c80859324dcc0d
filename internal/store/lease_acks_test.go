package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// queueAck queues an Ack of t as a concurrent Ack waiting for its grouped
// call would be, and returns where its answer arrives.
func (e *env) queueAck(t *Task) chan error {
	w := &groupWait[finishOp]{item: finishOp{t: t, mode: "ack"}, done: make(chan error, 1)}
	e.c.acks.mu.Lock()
	e.c.acks.queued = append(e.c.acks.queued, w)
	e.c.acks.mu.Unlock()
	return w.done
}

// answered returns the answer a lease call gave a queued ack: given before
// the call returned, so it is there without waiting.
func answered(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	default:
		t.Fatal("the lease call did not answer the queued ack")
		return nil
	}
}

// A lease call carries the Acks queued meanwhile: they are answered as if
// sent alone, with no call of their own, and fenced by their tokens.
func TestLeaseCarriesQueuedAcks(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		for _, id := range []string{"a", "b", "c"} {
			e.enqueue("", ID(id), Level(1))
		}
		got := e.lease("w", 2)
		require.Equal(t, []string{"a", "b"}, ids(got))
		okAck, lostAck := e.queueAck(got[0]), e.queueAck(stale(got[1], "nope"))

		require.Equal(t, []string{"c"}, ids(e.lease("w", 2)))
		require.NoError(t, answered(t, okAck))
		requireLeaseLost(t, answered(t, lostAck))
		e.gone("a")
		require.Equal(t, StateActive, e.inspect("b").State, "a stale ack changes nothing")
		require.ElementsMatch(t, []string{"b", "c"}, e.zset(e.c.keys.leases()))
		require.ElementsMatch(t, []string{"b", "c"}, e.zset(e.c.keys.running()))
		require.Equal(t, "2", e.rdb.HGet(e.ctx, e.c.keys.busy(), "w").Val())
		e.requireCounts(counts{}, counts{Active: 2})

		// An empty lease carries them too.
		done := e.queueAck(got[1])
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
		require.NoError(t, err)
		require.Empty(t, res.Tasks)
		require.NoError(t, answered(t, done))
		e.gone("b")
		e.requireCounts(counts{}, counts{Active: 1})
	})
}

// With Retention, acks keep records, which the lease's fast path does not:
// they stay queued for their own call.
func TestLeaseLeavesAcksWithRetention(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Retention = 3600e9 })
		e.enqueue("", ID("a"), Level(1))
		e.queueAck(e.leaseOne("w"))
		_, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
		require.NoError(t, err)
		require.Len(t, e.c.acks.take(10), 1)
	})
}

// A wrong-typed shared key fails a lease call that carries acks closed:
// the acks get the error naming the key and nothing changes.
func TestLeaseCarriedAcksFailClosed(t *testing.T) {
	withCorruptSharedKey(t, func(t *testing.T, e *env, a *Task, key string) {
		done := e.queueAck(a)
		_, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 2})
		requireCorrupt(t, err, key)
		requireCorrupt(t, answered(t, done), key)
		require.Equal(t, []string{"b"}, e.pending(1), "b is still pending")
		require.Equal(t, a.Token, e.inspect("a").Token, "a keeps its lease")
	})
}

// The tasks of one lease call share its token, so an ack batch settles the
// counts of each shared state once: per worker, per worker and pool, per
// level, whatever the mix of pools, levels and stale tokens in the batch.
func TestLeaseAcksSettleSharedStates(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		for _, l := range []int{2, 2, 1, 0, 0} {
			e.enqueue("", Level(l))
		}
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Groups: []LeaseGroup{
			{Levels: []int{2}, Count: 2, Pool: 1}, {Levels: []int{1, 0}, Count: 3, Pool: 2}}})
		require.NoError(t, err)
		got := res.Tasks
		require.Len(t, got, 5)
		for _, tk := range got[1:] {
			require.Equal(t, got[0].Token, tk.Token, "one token per call")
		}
		require.Equal(t, map[string]string{"w": "5", "w|1": "2", "w|2": "3"}, e.rdb.HGetAll(e.ctx, e.c.keys.busy()).Val())
		// A stale ack first (the first to meet its state string), then the
		// others: two of them (level 0, pool 2) share one state.
		lost := e.queueAck(stale(got[0], "nope"))
		done := []chan error{e.queueAck(got[1]), e.queueAck(got[2]), e.queueAck(got[3]), e.queueAck(got[4])}
		_, err = e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
		require.NoError(t, err)
		requireLeaseLost(t, answered(t, lost))
		for _, d := range done {
			require.NoError(t, answered(t, d))
		}
		require.Equal(t, map[string]string{"w": "1", "w|1": "1"}, e.rdb.HGetAll(e.ctx, e.c.keys.busy()).Val())
		e.requireCounts(counts{}, counts{}, counts{Active: 1})
		require.Equal(t, []string{got[0].ID}, e.zset(e.c.keys.leases()))
	})
}

// An ID twice in the lists (its record deleted behind the list's back,
// then enqueued again) is one task: one lease call leases it once, with
// one count, and drops the stale entry.
func TestLeaseDuplicateIDLeasedOnce(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("x", ID("a"))
		require.NoError(t, e.rdb.Del(e.ctx, e.c.keys.task("a")).Err())
		e.enqueue("x", ID("a"))
		e.enqueue("x", ID("b"))
		got := e.lease("w", 3)
		require.Equal(t, []string{"a", "b"}, ids(got))
		require.Equal(t, "2", e.rdb.HGet(e.ctx, e.c.keys.busy(), "w").Val())
		require.Empty(t, e.pending(1), "the stale entry is gone")
		require.NoError(t, e.c.Ack(e.ctx, got[0]))
		require.NoError(t, e.c.Ack(e.ctx, got[1]))
		require.Empty(t, e.rdb.HGetAll(e.ctx, e.c.keys.busy()).Val())
		e.requireCounts(counts{}, counts{}, counts{})
	})
}

// Two acks of one lease in one batch end it once: the second is told the
// lease is gone, and the counts drop by one.
func TestLeaseAckTwiceInOneBatch(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("a"), Level(1))
		e.enqueue("", ID("b"), Level(1))
		got := e.lease("w", 2)
		first, second := e.queueAck(got[0]), e.queueAck(got[0])
		_, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
		require.NoError(t, err)
		require.NoError(t, answered(t, first))
		requireLeaseLost(t, answered(t, second))
		e.gone("a")
		require.Equal(t, "1", e.rdb.HGet(e.ctx, e.c.keys.busy(), "w").Val())
		e.requireCounts(counts{}, counts{Active: 1})
	})
}
