package store

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// A tick is enqueued once: a second try of it, or of an older tick, is
// refused with ErrTickTaken; a newer tick goes. Concurrent tries of one
// tick store one task. A tick refused as a duplicate is decided too.
func TestPeriodicTickOnce(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		at := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
		first := e.enqueue("p", Tick("nightly", at), Level(2), MaxRetries(1))
		require.Equal(t, "nightly@2026-11-28T17:00:00Z", first.ID)
		require.Equal(t, 2, e.inspect(first.ID).Level, "a periodic task keeps its options")
		for _, try := range []time.Time{at, at.Add(-time.Second)} {
			_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("p")), Tick("nightly", try))
			require.ErrorIs(t, err, ErrTickTaken)
		}
		e.enqueue("p", Tick("other", at)) // schedules are apart

		// Concurrent tries of the next tick: exactly one is stored.
		next := at.Add(time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Go(func() {
				_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("p")), Tick("nightly", next), Level(2))
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
				require.ErrorIs(t, err, ErrTickTaken)
			}
		}
		require.Equal(t, 1, ok)
		require.Len(t, e.pending(2), 2)

		// A unique periodic task refused by its lock decides its tick.
		later := next.Add(time.Second)
		e.enqueue("u", Unique(time.Hour))
		_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("u")), Tick("nightly", later), Unique(time.Hour))
		require.ErrorIs(t, err, ErrDuplicateTask)
		_, err = e.c.Enqueue(e.ctx, NewTask("t", []byte("v")), Tick("nightly", later))
		require.ErrorIs(t, err, ErrTickTaken)
		e.enqueue("w", Tick("nightly", later.Add(time.Second)), Unique(time.Hour), ProcessIn(time.Minute))

		_, err = e.c.EnqueueBatch(e.ctx, []*Task{NewTask("t", nil)}, Tick("nightly", later.Add(time.Hour)))
		require.ErrorIs(t, err, ErrInvalidTask)
	})
}

// clusterPeriodicScenario enqueues ticks on the cluster (TestCluster).
func clusterPeriodicScenario(t *testing.T, e *env) {
	at := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
	e.enqueue("", Tick("s", at))
	_, err := e.c.Enqueue(e.ctx, NewTask("t", nil), Tick("s", at))
	require.ErrorIs(t, err, ErrTickTaken)
	e.enqueue("", Tick("s", at.Add(time.Second)), Unique(time.Hour))
}
