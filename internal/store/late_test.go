package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// A lease can expire while its holder cannot reach the queue (its slot
// migrating refuses every call), with no one able to recover it either.
// The holder's first call afterwards keeps it: a heartbeat extends its own
// leases before it recovers expired ones, and a lease call ends the leases
// of the acks it carries before it recovers. Recovered first, the task
// would run a second time.

func TestHeartbeatKeepsOwnExpiredLease(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("mine"))
		e.enqueue("", ID("theirs"))
		mine, theirs := e.leaseOne("w1"), e.leaseOne("w2")
		e.clk.Advance(defaultLeaseDuration + time.Second)
		e.beat("w1", 1, 0, mine) // no lost lease
		require.Equal(t, []string{"theirs"}, e.pending(0), "only the other worker's expired lease is recovered")
		require.NoError(t, e.c.Ack(e.ctx, mine))
		requireLeaseLost(t, e.c.Ack(e.ctx, theirs))
		e.requireCounts(counts{Pending: 1})
	})
}

func TestCarriedAckBeatsRecovery(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("done"))
		tk := e.leaseOne("w1")
		e.clk.Advance(defaultLeaseDuration + time.Second)
		wait, ok := e.c.CarryAck(tk)
		require.True(t, ok)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w1"})
		require.NoError(t, err)
		require.NoError(t, wait(e.ctx), "the ack lands")
		require.Empty(t, res.Tasks, "the acked task is not recovered and leased again")
		e.gone("done")
		e.requireCounts()
	})
}

// The carried acks run before the sweep's writes, not before its checks:
// a wrong-typed key the sweep needs still fails the call with nothing
// changed.
func TestCarriedAckBeforeSweepFailsClosed(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("a"))
		e.enqueue("", ID("b"))
		a, _ := e.leaseOne("w1"), e.leaseOne("w2")
		e.clk.Advance(defaultLeaseDuration + time.Second) // b's lease expired: the sweep recovers
		require.NoError(t, e.rdb.Set(e.ctx, e.c.keys.scheduled(), "oops", 0).Err())
		wait, ok := e.c.CarryAck(a)
		require.True(t, ok)
		_, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w1"})
		require.ErrorIs(t, err, ErrCorrupt)
		require.ErrorIs(t, wait(e.ctx), ErrCorrupt)
		require.Equal(t, StateActive, e.inspect("a").State, "the ack changed nothing")
		require.NoError(t, e.rdb.Del(e.ctx, e.c.keys.scheduled()).Err())
		require.NoError(t, e.c.Ack(e.ctx, a))
		e.gone("a")
	})
}
