package queue

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/wire"
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
		res, err := eng(e.c).Lease(e.ctx, wire.LeaseRequest{Worker: "w", Count: 1})
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
		_, err := eng(e.c).Lease(e.ctx, wire.LeaseRequest{Worker: "w", Count: 1})
		require.NoError(t, err)
		require.Len(t, e.c.acks.take(10), 1)
	})
}

// A wrong-typed shared key fails a lease call that carries acks closed:
// the acks get the error naming the key and nothing changes.
func TestLeaseCarriedAcksFailClosed(t *testing.T) {
	withCorruptSharedKey(t, func(t *testing.T, e *env, a *Task, key string) {
		done := e.queueAck(a)
		_, err := eng(e.c).Lease(e.ctx, wire.LeaseRequest{Worker: "w", Count: 2})
		requireCorrupt(t, err, key)
		requireCorrupt(t, answered(t, done), key)
		require.Equal(t, []string{"b"}, e.pending(1), "b is still pending")
		require.Equal(t, a.Token, e.inspect("a").Token, "a keeps its lease")
	})
}
