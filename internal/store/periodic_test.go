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
		first := e.enqueue("p", Tick("nightly", "", at), Level(2), MaxRetries(1))
		require.Equal(t, "nightly@2026-11-28T17:00:00Z", first.ID)
		require.Equal(t, 2, e.inspect(first.ID).Level, "a periodic task keeps its options")
		for _, try := range []time.Time{at, at.Add(-time.Second)} {
			_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("p")), Tick("nightly", "", try))
			require.ErrorIs(t, err, ErrTickTaken)
		}
		e.enqueue("p", Tick("other", "", at)) // schedules are apart

		// Concurrent tries of the next tick: exactly one is stored.
		next := at.Add(time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Go(func() {
				_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("p")), Tick("nightly", "", next), Level(2))
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
		_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("u")), Tick("nightly", "", later), Unique(time.Hour))
		require.ErrorIs(t, err, ErrDuplicateTask)
		_, err = e.c.Enqueue(e.ctx, NewTask("t", []byte("v")), Tick("nightly", "", later))
		require.ErrorIs(t, err, ErrTickTaken)
		e.enqueue("w", Tick("nightly", "", later.Add(time.Second)), Unique(time.Hour), ProcessIn(time.Minute))

		_, err = e.c.EnqueueBatch(e.ctx, []*Task{NewTask("t", nil)}, Tick("nightly", "", later.Add(time.Hour)))
		require.ErrorIs(t, err, ErrInvalidTask)
	})
}

// clusterPeriodicScenario enqueues ticks on the cluster (TestCluster).
func clusterPeriodicScenario(t *testing.T, e *env) {
	at := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
	e.enqueue("", Tick("s", "", at))
	_, err := e.c.Enqueue(e.ctx, NewTask("t", nil), Tick("s", "", at))
	require.ErrorIs(t, err, ErrTickTaken)
	e.enqueue("", Tick("s", "", at.Add(time.Second)), Unique(time.Hour))
}

// The schedule's key holds the last tick with the spec of the runtime
// that decided it (the newest writer's); a key written before specs were
// kept (the tick alone) still orders ticks.
func TestPeriodicTickSpec(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		at := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
		last, spec, err := e.c.LastTick(e.ctx, "s")
		require.NoError(t, err)
		require.True(t, last.IsZero())
		require.Empty(t, spec)
		e.enqueue("", Tick("s", "@hourly", at))
		e.enqueue("", Tick("s", `CRON_TZ=Europe/Paris 0 "9" * * *`, at.Add(time.Second)))
		last, spec, err = e.c.LastTick(e.ctx, "s")
		require.NoError(t, err)
		require.Equal(t, at.Add(time.Second), last.UTC())
		require.Equal(t, `CRON_TZ=Europe/Paris 0 "9" * * *`, spec)

		require.NoError(t, e.rdb.Set(e.ctx, e.c.keys.periodic("old"), at.UnixMilli(), 0).Err())
		_, err = e.c.Enqueue(e.ctx, NewTask("t", nil), Tick("old", "@hourly", at))
		require.ErrorIs(t, err, ErrTickTaken)
		e.enqueue("", Tick("old", "@hourly", at.Add(time.Hour)))
		require.NoError(t, e.rdb.Set(e.ctx, e.c.keys.periodic("bad"), "x", 0).Err())
		_, _, err = e.c.LastTick(e.ctx, "bad")
		require.ErrorIs(t, err, ErrCorrupt)
	})
}
