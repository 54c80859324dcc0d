package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// retained keeps finished records an hour, so that Inspect reads them.
func retained(c *Config) { c.Retention = time.Hour; c.Levels = 3 }

// requireCanceled asserts that task id ended canceled: Inspect says so,
// it is in done for Retention, its checkpoint is gone and no list, set
// or lease holds it.
func (e *env) requireCanceled(id string) {
	e.t.Helper()
	got := e.inspect(id)
	require.Equal(e.t, StateCanceled, got.State)
	require.Equal(e.t, "canceled", got.LastError)
	require.Empty(e.t, got.Checkpoint, "a canceled task keeps no checkpoint")
	require.Contains(e.t, e.zset(e.c.keys.done()), id)
	require.NotContains(e.t, e.zset(e.c.keys.scheduled()), id)
	require.NotContains(e.t, e.zset(e.c.keys.leases()), id)
	for l := range e.c.Levels() {
		require.NotContains(e.t, e.pending(l), id)
	}
}

// canceledAt returns Stats' Canceled of each level.
func (e *env) canceledAt() []int64 {
	e.t.Helper()
	var out []int64
	for _, l := range e.stats().Levels {
		out = append(out, l.Canceled)
	}
	return out
}

// Every state row of Cancel: waiting tasks end canceled at once, a second
// cancel is no error, finished tasks and unknown IDs are refused and
// nothing changes.
func TestCancelByState(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, retained)
		pending := e.enqueue("p", Level(1))
		was, err := e.c.Cancel(e.ctx, pending.ID)
		require.NoError(t, err)
		require.Equal(t, StatePending, was)
		e.requireCanceled(pending.ID)
		was, err = e.c.Cancel(e.ctx, pending.ID)
		require.NoError(t, err, "a second cancel is no error")
		require.Equal(t, StateCanceled, was)

		sched := e.enqueue("s", Level(2), ProcessIn(time.Hour))
		was, err = e.c.Cancel(e.ctx, sched.ID)
		require.NoError(t, err)
		require.Equal(t, StateScheduled, was)
		e.requireCanceled(sched.ID)

		retry := e.enqueue("r", MaxRetries(3))
		lt := e.leaseOne("w")
		require.Equal(t, retry.ID, lt.ID)
		require.NoError(t, e.c.Retry(e.ctx, lt, e.clk.Now().Add(time.Hour), "boom"))
		was, err = e.c.Cancel(e.ctx, retry.ID)
		require.NoError(t, err)
		require.Equal(t, StateRetry, was)
		e.requireCanceled(retry.ID)
		e.requireCounts() // nothing pending, active, scheduled or dead anywhere
		require.Equal(t, []int64{1, 1, 1}, e.canceledAt())

		done := e.enqueue("d")
		require.NoError(t, e.c.Ack(e.ctx, e.leaseOne("w")))
		_, err = e.c.Cancel(e.ctx, done.ID)
		require.ErrorIs(t, err, ErrTaskFinished)
		require.ErrorContains(t, err, "done")
		dead := e.enqueue("x")
		require.NoError(t, e.c.DeadLetter(e.ctx, e.leaseOne("w"), "bad"))
		_, err = e.c.Cancel(e.ctx, dead.ID)
		require.ErrorIs(t, err, ErrTaskFinished)
		require.ErrorContains(t, err, "dead")
		require.Equal(t, StateDead, e.inspect(dead.ID).State)

		_, err = e.c.Cancel(e.ctx, "nope")
		require.ErrorIs(t, err, ErrTaskNotFound)
		require.Equal(t, []int64{1, 1, 1}, e.canceledAt())

		evs, err := e.c.Preemptions(e.ctx, "", 100)
		require.NoError(t, err)
		var canceled []string
		for _, ev := range evs {
			if ev.Kind == FeedCanceled {
				canceled = append(canceled, ev.ID)
			}
		}
		require.Equal(t, []string{pending.ID, sched.ID, retry.ID}, canceled)
	})
}

// A running task's cancel is requested: its holder's heartbeat names it,
// and every way its lease ends but success ends it canceled; it is never
// leased again.
func TestCancelRunning(t *testing.T) {
	ends := map[string]func(e *env, lt *Task) error{
		"retry":    func(e *env, lt *Task) error { return e.c.Retry(e.ctx, lt, e.clk.Now(), "boom") },
		"dead":     func(e *env, lt *Task) error { return e.c.DeadLetter(e.ctx, lt, "bad") },
		"preempt":  func(e *env, lt *Task) error { return e.c.Requeue(e.ctx, lt, RequeuePreempted) },
		"shutdown": func(e *env, lt *Task) error { return e.c.Requeue(e.ctx, lt, RequeueShutdown) },
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			parallelBackends(t, func(t *testing.T, b testredis.Backend) {
				e := newEnv(t, b, retained)
				task := e.enqueue("p", Level(1), MaxRetries(5), Unique(time.Hour))
				lt := e.leaseOne("w")
				_, err := e.c.SaveCheckpoint(e.ctx, lt.ID, lt.Token, []byte("cur"))
				require.NoError(t, err)
				was, err := e.c.Cancel(e.ctx, task.ID)
				require.NoError(t, err)
				require.Equal(t, StateActive, was)
				running := e.inspect(task.ID)
				require.Equal(t, StateActive, running.State, "it runs until its lease ends")
				require.Equal(t, e.clk.Now().UnixMilli(), running.CancelRequestedAt.UnixMilli(), "Inspect shows the request")
				was, err = e.c.Cancel(e.ctx, task.ID)
				require.NoError(t, err, "a second request is no error")
				require.Equal(t, StateActive, was)

				reply, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1, Leases: []*Task{lt}})
				require.NoError(t, err)
				require.Equal(t, []string{task.ID}, reply.Canceled)
				require.Empty(t, reply.Lost)

				require.ErrorIs(t, end(e, lt), ErrEndedCanceled)
				e.requireCanceled(task.ID)
				e.clk.Advance(time.Minute)
				require.Empty(t, e.lease("w", 5), "a canceled task never runs again")
				e.requireCounts()
				require.Equal(t, []int64{0, 1, 0}, e.canceledAt())
				e.enqueue("p", Unique(time.Hour)) // its uniqueness lock went with it
			})
		})
	}
}

// A handler that succeeded before it saw the cancel wins: the task is
// done; one that returned because of it ends canceled (CancelRun).
func TestCancelRacesSuccess(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, retained)
		won := e.enqueue("a")
		lt := e.leaseOne("w")
		_, err := e.c.Cancel(e.ctx, won.ID)
		require.NoError(t, err)
		require.NoError(t, e.c.Ack(e.ctx, lt))
		require.Equal(t, StateDone, e.inspect(won.ID).State)

		lost := e.enqueue("b")
		lt = e.leaseOne("w")
		_, err = e.c.Cancel(e.ctx, lost.ID)
		require.NoError(t, err)
		require.NoError(t, e.c.CancelRun(e.ctx, lt))
		e.requireCanceled(lost.ID)
		requireLeaseLost(t, e.c.CancelRun(e.ctx, lt))
		require.Equal(t, []int64{1, 0, 0}, e.canceledAt())
	})
}

// Without Retention an ack takes the fast path, which a canceled state
// never matches (it has the cancel's field), and the task is gone: done.
func TestCancelFastAck(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		task := e.enqueue("a")
		lt := e.leaseOne("w")
		_, err := e.c.Cancel(e.ctx, task.ID)
		require.NoError(t, err)
		raw, err := e.rdb.Get(e.ctx, e.c.keys.state(task.ID)).Result()
		require.NoError(t, err)
		require.Contains(t, raw, `"cx":`)
		require.NoError(t, e.c.Ack(e.ctx, lt))
		e.gone(task.ID)
		e.requireCounts()
	})
}

// A worker that dies after the cancel: recovery ends the task canceled,
// not pending, and releases its uniqueness lock, as Cancel does for a
// waiting task.
func TestCancelRecoveredAndUnique(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, retained)
		task := e.enqueue("u", Unique(time.Hour), Level(2))
		lt := e.leaseOne("dies")
		_, err := e.c.SaveCheckpoint(e.ctx, lt.ID, lt.Token, []byte("cur"))
		require.NoError(t, err)
		_, err = e.c.Cancel(e.ctx, task.ID)
		require.NoError(t, err)
		e.clk.Advance(e.c.Config().LeaseDuration + time.Second)
		_, err = e.c.Heartbeat(e.ctx, Heartbeat{Worker: "other", Capacity: 1})
		require.NoError(t, err)
		e.requireCanceled(task.ID)
		require.Equal(t, 1, e.inspect(task.ID).Recoveries)
		require.Empty(t, e.lease("other", 5))
		require.Equal(t, []int64{0, 0, 1}, e.canceledAt())
		e.enqueue("u", Unique(time.Hour)) // the lock went with the cancel

		waiting := e.enqueue("v", Unique(time.Hour))
		_, err = e.c.Cancel(e.ctx, waiting.ID)
		require.NoError(t, err)
		e.enqueue("v", Unique(time.Hour))
		e.requireCounts(counts{Pending: 2})
	})
}

// The lease script's recovery ends a dead holder's canceled task
// canceled too, and leases what waits behind it instead.
func TestCancelRecoveredByLease(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, retained)
		task := e.enqueue("a")
		e.leaseOne("dies")
		_, err := e.c.Cancel(e.ctx, task.ID)
		require.NoError(t, err)
		behind := e.enqueue("b")
		e.clk.Advance(e.c.Config().LeaseDuration + time.Second)
		got := e.lease("other", 5)
		require.Equal(t, []string{behind.ID}, ids(got), "the canceled task is not recovered to run")
		e.requireCanceled(task.ID)
		require.Equal(t, []int64{1, 0, 0}, e.canceledAt())
	})
}
