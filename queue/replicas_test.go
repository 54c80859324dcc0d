package queue

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testredis/sentinelproc"
	"github.com/overtake/overtake/internal/wire"
)

func TestWaitReplicasConfig(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	_, err := New(rdb, Config{WaitReplicas: -1})
	assert.ErrorContains(t, err, "negative WaitReplicas")
	_, err = New(rdb, Config{WaitReplicas: 1, WaitTimeout: time.Microsecond})
	assert.ErrorContains(t, err, "WaitTimeout")
	c, err := New(rdb, Config{WaitReplicas: 1})
	require.NoError(t, err)
	assert.Equal(t, time.Second, c.Config().WaitTimeout)
	c, err = New(rdb, Config{})
	require.NoError(t, err)
	assert.Zero(t, c.Config().WaitTimeout, "no WAIT, no timeout")
}

// With WaitReplicas 1 on a Redis that has no replica, every write call
// fails with ErrNotReplicated, though the write was applied; the same calls
// succeed without WaitReplicas.
func TestWaitReplicasWithoutReplicaFails(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		if b.IsMini() {
			t.Skip("miniredis has no WAIT")
		}
		plain := newEnv(t, b, nil)
		ns := plain.c.cfg.Namespace
		e := newEnvOn(t, b.Client, ns, func(c *Config) { c.WaitReplicas, c.WaitTimeout = 1, 20*time.Millisecond })
		ctx := e.ctx

		_, err := e.c.Enqueue(ctx, NewTask("t", nil), ID("one"))
		require.ErrorIs(t, err, ErrNotReplicated)
		e.inspect("one") // applied on the primary
		_, err = e.c.EnqueueBatch(ctx, []*Task{NewTask("t", nil), NewTask("t", nil)})
		require.ErrorIs(t, err, ErrNotReplicated)
		var wg sync.WaitGroup
		errs := make([]error, 8) // concurrent calls: grouped into one script call
		for i := range errs {
			wg.Go(func() { _, errs[i] = e.c.Enqueue(ctx, NewTask("t", nil)) })
		}
		wg.Wait()
		for _, err := range errs {
			require.ErrorIs(t, err, ErrNotReplicated)
		}
		require.Len(t, plain.pending(0), 11, "every task was enqueued on the primary")

		_, err = eng(e.c).Lease(ctx, wire.LeaseRequest{Worker: "w", Count: 1})
		require.ErrorIs(t, err, ErrNotReplicated)
		tk := plain.leaseOne("w")
		_, err = eng(e.c).SaveCheckpoint(ctx, tk.ID, tk.Token, []byte("1"))
		require.ErrorIs(t, err, ErrNotReplicated)
		_, err = eng(e.c).Heartbeat(ctx, heartbeat{Worker: "w", TTL: time.Second, Leases: []*Task{tk}})
		require.ErrorIs(t, err, ErrNotReplicated)
		require.ErrorIs(t, eng(e.c).Ack(ctx, tk), ErrNotReplicated)
		plain.gone(tk.ID) // acked on the primary

		// Without WaitReplicas the same calls succeed.
		_, err = plain.c.Enqueue(ctx, NewTask("t", nil))
		require.NoError(t, err)
		tk = plain.leaseOne("w")
		require.NoError(t, eng(plain.c).Ack(ctx, tk))
	})
}

// With a replica in sync, WaitReplicas 1 changes nothing to the calls'
// results.
func TestWaitReplicasWithReplica(t *testing.T) {
	s := testredis.StartSentinel(t, sentinelproc.Options{})
	rdb := s.NewClient(t, nil)
	e := newEnvOn(t, rdb, "wr", func(c *Config) { c.WaitReplicas = 1 })
	e.enqueue("a", ID("a"))
	_, err := e.c.EnqueueBatch(e.ctx, []*Task{NewTask("t", nil), NewTask("t", nil)})
	require.NoError(t, err)
	tk := e.leaseOne("w")
	_, err = eng(e.c).SaveCheckpoint(e.ctx, tk.ID, tk.Token, []byte("1"))
	require.NoError(t, err)
	require.NoError(t, eng(e.c).Ack(e.ctx, tk))
	e.gone(tk.ID)
	n, err := redis.NewClient(&redis.Options{Addr: s.NodeAddrs()[1]}).Exists(e.ctx, e.c.keys.state("a")).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the replica has the ack")
}
