package store

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// An equal task (same type and payload) is refused while the first holds
// the lock, by Enqueue and by EnqueueBatch; another payload or type is
// not, nor is an equal task without Unique. The lock of a delayed task
// lasts ttl from when it is due.
func TestUniqueRefusesEqualTask(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		first := e.enqueue("x", Unique(time.Hour), Level(2), MaxRetries(3))
		_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("x")), Unique(time.Hour))
		require.ErrorIs(t, err, ErrDuplicateTask)
		require.ErrorContains(t, err, "uniqueness lock")
		e.enqueue("y", Unique(time.Hour))
		_, err = e.c.Enqueue(e.ctx, NewTask("other", []byte("x")), Unique(time.Hour))
		require.NoError(t, err)
		e.enqueue("x") // not unique itself
		require.Equal(t, 2, e.inspect(first.ID).Level, "a unique task keeps its level")
		require.Equal(t, 3, e.inspect(first.ID).MaxRetries)
		require.Equal(t, uniqueDigest("t", []byte("x")), e.inspect(first.ID).Headers[UniqueHeader])

		// The batch path: each task is checked, an equal one in the same
		// batch included; a refused task leaves nothing behind.
		out, err := e.c.EnqueueBatch(e.ctx, []*Task{NewTask("t", []byte("x")), NewTask("t", []byte("z")),
			NewTask("t", []byte("z")), NewTask("t", []byte("w"))}, Unique(time.Hour))
		require.ErrorIs(t, err, ErrDuplicateTask)
		require.Nil(t, out[0])
		require.NotNil(t, out[1])
		require.Nil(t, out[2])
		require.NotNil(t, out[3])
		require.Len(t, e.pending(0), 5, "y, other, x without Unique, z, w")

		// A delayed task's lock lasts ttl from when it is due.
		e.enqueue("later", Unique(time.Millisecond), ProcessIn(time.Hour))
		ttl, err := e.rdb.PTTL(e.ctx, e.c.keys.unique(uniqueDigest("t", []byte("later")))).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 59*time.Minute)
		_, err = e.c.Enqueue(e.ctx, NewTask("t", []byte("later")), Unique(time.Hour))
		require.ErrorIs(t, err, ErrDuplicateTask)

		_, err = e.c.Enqueue(e.ctx, NewTask("t", nil), Unique(0))
		require.ErrorIs(t, err, ErrInvalidTask)
	})
}

// Tasks that differ only in where their type ends and their payload
// begins are different tasks: neither holds the other's lock.
func TestUniqueDigestSplitsTypeAndPayload(t *testing.T) {
	require.NotEqual(t, uniqueDigest("n\x00", []byte("z")), uniqueDigest("n", []byte("\x00z")))
	require.NotEqual(t, uniqueDigest("ab", nil), uniqueDigest("a", []byte("b")))
	require.Equal(t, uniqueDigest("n", []byte("z")), uniqueDigest("n", []byte("z")))
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		_, err := e.c.Enqueue(e.ctx, NewTask("n\x00", []byte("z")), Unique(time.Hour))
		require.NoError(t, err)
		_, err = e.c.Enqueue(e.ctx, NewTask("n", []byte("\x00z")), Unique(time.Hour))
		require.NoError(t, err, "a different task is not a duplicate")
		_, err = e.c.Enqueue(e.ctx, NewTask("n", []byte("\x00z")), Unique(time.Hour))
		require.ErrorIs(t, err, ErrDuplicateTask)
	})
}

// N producers enqueue the same unique task at once: exactly one succeeds
// and one task is stored. Concurrent Enqueues share batch script calls,
// so this goes through both scripts.
func TestUniqueConcurrentProducers(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		uniqueConcurrentScenario(t, newEnv(t, b, nil))
	})
}

func uniqueConcurrentScenario(t *testing.T, e *env) {
	for round := range 5 {
		const n = 32
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte{byte(round)}), Unique(time.Hour))
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		ok := 0
		for err := range errs {
			if err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, ErrDuplicateTask)
			}
		}
		require.Equal(t, 1, ok, "round %d: exactly one producer succeeds", round)
		require.Len(t, e.pending(0), round+1)
	}
}

// The lock is released when the task succeeds (ReleaseUnique after its
// ack), kept when it fails or is dead-lettered, and gone after ttl; a
// task whose lock expired and was taken by a newer equal task does not
// release the newer one's.
func TestUniqueLockLifetime(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		uniqueLifetimeScenario(t, newEnv(t, b, nil), b)
	})
}

// uniqueLifetimeScenario is TestUniqueLockLifetime on e, whose backend is
// b (the zero Backend for the cluster).
func uniqueLifetimeScenario(t *testing.T, e *env, b testredis.Backend) {
	refused := func(p string) {
		t.Helper()
		_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte(p)), Unique(time.Hour))
		require.ErrorIs(t, err, ErrDuplicateTask)
	}

	// Success releases it.
	e.enqueue("ok", Unique(time.Hour))
	lt := e.leaseOne("w")
	refused("ok") // running
	require.NoError(t, e.c.Ack(e.ctx, lt))
	require.NoError(t, e.c.ReleaseUnique(e.ctx, lt))
	e.enqueue("ok", Unique(time.Hour))

	// A retry and a dead letter keep it.
	e.enqueue("bad", Unique(time.Hour), Level(2))
	lt = e.leaseOne("w")
	require.NoError(t, e.c.Retry(e.ctx, lt, e.clk.Now(), "boom"))
	refused("bad")
	lt = e.leaseOne("w")
	require.Equal(t, []byte("bad"), lt.Payload)
	require.NoError(t, e.c.DeadLetter(e.ctx, lt, "dead"))
	refused("bad")

	// After ttl the lock is gone; the old holder then releases
	// nothing of the new one's.
	old := e.enqueue("short", Unique(50*time.Millisecond))
	refused("short")
	if b.IsMini() {
		b.Miniredis.FastForward(50 * time.Millisecond)
	}
	var newer *Task
	require.Eventually(t, func() bool {
		var err error
		newer, err = e.c.Enqueue(e.ctx, NewTask("t", []byte("short")), Unique(time.Hour))
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, e.c.ReleaseUnique(e.ctx, e.inspect(old.ID)))
	refused("short")
	require.NoError(t, e.c.ReleaseUnique(e.ctx, e.inspect(newer.ID)))
	e.enqueue("short", Unique(time.Hour))

	// A task without Unique releases nothing.
	require.NoError(t, e.c.ReleaseUnique(e.ctx, e.enqueue("plain")))
}

// clusterUniqueScenario runs uniqueness on the cluster (TestCluster):
// every key of the scripts is declared and in the queue's slot. The
// concurrent producers and the lock's lifetime run on queues of their
// own.
func clusterUniqueScenario(t *testing.T, e *env) {
	cfg := e.c.Config()
	uniqueConcurrentScenario(t, newEnvOn(t, e.rdb, cfg.Namespace+"-uc", func(c *Config) { c.Name = cfg.Name }))
	uniqueLifetimeScenario(t, newEnvOn(t, e.rdb, cfg.Namespace+"-ul", func(c *Config) { c.Name = cfg.Name }), testredis.Backend{})
	uniqueDeadScenario(t, newEnvOn(t, e.rdb, cfg.Namespace+"-ud", func(c *Config) { c.Name = cfg.Name }), testredis.Backend{})

	u := e.enqueue("u", Unique(time.Hour))
	_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("u")), Unique(time.Hour))
	require.ErrorIs(t, err, ErrDuplicateTask)
	_, err = e.c.EnqueueBatch(e.ctx, []*Task{NewTask("t", []byte("u")), NewTask("t", []byte("v"))},
		Unique(time.Hour), ProcessIn(time.Minute))
	require.ErrorIs(t, err, ErrDuplicateTask)
	require.NoError(t, e.c.ReleaseUnique(e.ctx, e.inspect(u.ID)))
	e.enqueue("u", Unique(time.Hour), ProcessIn(time.Minute))
}

// Deleting a dead unique task releases its lock (the task is gone: an
// equal one may come, as in asynq); requeueing it keeps the lock; a
// deleted task whose lock expired and was taken by a newer equal task
// leaves the newer one's lock alone.
func TestUniqueDeadDeleteReleases(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		uniqueDeadScenario(t, newEnv(t, b, nil), b)
	})
}

// uniqueDeadScenario is TestUniqueDeadDeleteReleases on e, whose backend
// is b (the zero Backend for the cluster).
func uniqueDeadScenario(t *testing.T, e *env, b testredis.Backend) {
	refused := func(p string) {
		t.Helper()
		_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte(p)), Unique(time.Hour))
		require.ErrorIs(t, err, ErrDuplicateTask)
	}
	kill := func(p string, ttl time.Duration) *Task {
		t.Helper()
		e.enqueue(p, Unique(ttl))
		lt := e.leaseOne("w")
		require.Equal(t, []byte(p), lt.Payload)
		require.NoError(t, e.c.DeadLetter(e.ctx, lt, "dead"))
		return lt
	}

	// Requeue keeps the lock; the task is pending again and holds it.
	dead := kill("kept", time.Hour)
	require.NoError(t, e.c.RequeueDead(e.ctx, dead.ID, RequeueDeadOptions{}))
	refused("kept")
	lt := e.leaseOne("w")
	require.Equal(t, dead.ID, lt.ID)
	require.NoError(t, e.c.Ack(e.ctx, lt))
	require.NoError(t, e.c.ReleaseUnique(e.ctx, lt))

	// Delete releases it.
	dead = kill("gone", time.Hour)
	refused("gone")
	require.NoError(t, e.c.DeleteDead(e.ctx, dead.ID))
	e.enqueue("gone", Unique(time.Hour), ProcessIn(time.Hour)) // not leased below
	refused("gone")

	// A dead task whose lock expired and went to a newer equal task
	// releases nothing of the newer one's when it is deleted.
	dead = kill("short", 50*time.Millisecond)
	if b.IsMini() {
		b.Miniredis.FastForward(50 * time.Millisecond)
	}
	require.Eventually(t, func() bool {
		_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("short")), Unique(time.Hour), ProcessIn(time.Hour))
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, e.c.DeleteDead(e.ctx, dead.ID))
	refused("short")

	// A dead task that is not unique is deleted as before.
	e.enqueue("plain")
	lt = e.leaseOne("w")
	require.NoError(t, e.c.DeadLetter(e.ctx, lt, "dead"))
	require.NoError(t, e.c.DeleteDead(e.ctx, lt.ID))
}
