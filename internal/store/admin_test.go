package store_test

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// adminEnv is one queue on one backend with a dead-lettered task.
type adminEnv struct {
	ctx context.Context
	b   testredis.Backend
	q   *queue.Client
}

func newAdminEnv(t *testing.T, b testredis.Backend) *adminEnv {
	t.Helper()
	q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix + ".admin", Name: "q"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &adminEnv{ctx: ctx, b: b, q: q}
}

// dead enqueues a task at level, leases it, saves a checkpoint and kills it.
func (e *adminEnv) dead(t *testing.T, level int, reason string) *store.Task {
	t.Helper()
	tk, err := e.q.Enqueue(e.ctx, queue.NewTask("job", []byte(`{"n":1}`)), queue.Level(level))
	require.NoError(t, err)
	res, err := store.Of(e.q).Lease(e.ctx, store.LeaseRequest{Worker: "w1", MinLevel: level})
	require.NoError(t, err)
	require.Len(t, res.Tasks, 1)
	leased := res.Tasks[0]
	require.Equal(t, tk.ID, leased.ID)
	_, err = store.Of(e.q).SaveCheckpoint(e.ctx, leased.ID, leased.Token, []byte("cursor=7"))
	require.NoError(t, err)
	require.NoError(t, store.Of(e.q).DeadLetter(e.ctx, leased, reason))
	return leased
}

func (e *adminEnv) level(t *testing.T, l int) queue.LevelStats {
	t.Helper()
	st, err := e.q.Stats(e.ctx)
	require.NoError(t, err)
	return st.Levels[l]
}

func TestRequeueDead(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newAdminEnv(t, b)
		tk := e.dead(t, 1, "boom")
		other, err := e.q.Enqueue(e.ctx, queue.NewTask("job", nil), queue.Level(1))
		require.NoError(t, err)
		require.EqualValues(t, 1, e.level(t, 1).Dead)

		require.NoError(t, e.q.RequeueDead(e.ctx, tk.ID, queue.RequeueDeadOptions{}))
		ls := e.level(t, 1)
		require.EqualValues(t, 0, ls.Dead)
		require.EqualValues(t, 0, ls.Active)
		require.EqualValues(t, 2, ls.Pending)
		ids, err := store.Of(e.q).Pending(e.ctx, 1)
		require.NoError(t, err)
		require.Equal(t, []string{other.ID, tk.ID}, ids, "a requeued dead task goes to the tail")
		got, err := e.q.Inspect(e.ctx, tk.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatePending, got.State)
		require.Equal(t, 0, got.Attempt, "fresh retry budget")
		require.Equal(t, "boom", got.LastError, "last error kept for reference")
		require.Equal(t, []byte("cursor=7"), got.Checkpoint, "checkpoint kept")
		require.EqualValues(t, 1, got.CheckpointSeq)
		dead, err := e.q.DeadTasks(e.ctx, 0, 10)
		require.NoError(t, err)
		require.Empty(t, dead)

		// Fenced by state: a second requeue changes nothing.
		require.ErrorIs(t, e.q.RequeueDead(e.ctx, tk.ID, queue.RequeueDeadOptions{}), queue.ErrNotDead)
		require.EqualValues(t, 2, e.level(t, 1).Pending)

		// It can be leased and finished like any task.
		res, err := store.Of(e.q).Lease(e.ctx, store.LeaseRequest{Worker: "w2", Count: 2})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 2)
		require.Equal(t, tk.ID, res.Tasks[1].ID)
		require.Equal(t, []byte("cursor=7"), res.Tasks[1].Checkpoint)
		for _, lt := range res.Tasks {
			require.NoError(t, store.Of(e.q).Ack(e.ctx, lt))
		}
		require.Equal(t, queue.LevelStats{Level: 1, Name: "normal"}, e.level(t, 1))
	})
}

func TestRequeueDeadResetCheckpoint(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newAdminEnv(t, b)
		tk := e.dead(t, 0, "bad state")
		require.NoError(t, e.q.RequeueDead(e.ctx, tk.ID, queue.RequeueDeadOptions{ResetCheckpoint: true}))
		got, err := e.q.Inspect(e.ctx, tk.ID)
		require.NoError(t, err)
		require.Nil(t, got.Checkpoint)
		require.EqualValues(t, 1, got.CheckpointSeq, "the sequence keeps counting")
	})
}

func TestDeleteDead(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newAdminEnv(t, b)
		tk := e.dead(t, 2, "boom")
		require.EqualValues(t, 1, e.level(t, 2).Dead)
		require.NoError(t, e.q.DeleteDead(e.ctx, tk.ID))
		require.EqualValues(t, 0, e.level(t, 2).Dead)
		_, err := e.q.Inspect(e.ctx, tk.ID)
		require.ErrorIs(t, err, queue.ErrTaskNotFound)
		require.ErrorIs(t, e.q.DeleteDead(e.ctx, tk.ID), queue.ErrTaskNotFound)
		require.ErrorIs(t, e.q.RequeueDead(e.ctx, tk.ID, queue.RequeueDeadOptions{}), queue.ErrTaskNotFound)
	})
}

func TestDeadAdminRefusesLiveTasks(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newAdminEnv(t, b)
		pending, err := e.q.Enqueue(e.ctx, queue.NewTask("job", nil), queue.Level(0))
		require.NoError(t, err)
		require.ErrorIs(t, e.q.DeleteDead(e.ctx, pending.ID), queue.ErrNotDead)
		require.ErrorIs(t, e.q.RequeueDead(e.ctx, pending.ID, queue.RequeueDeadOptions{}), queue.ErrNotDead)

		res, err := store.Of(e.q).Lease(e.ctx, store.LeaseRequest{Worker: "w1"})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		require.ErrorIs(t, e.q.DeleteDead(e.ctx, pending.ID), queue.ErrNotDead)
		ls := e.level(t, 0)
		require.EqualValues(t, 1, ls.Active)
		require.EqualValues(t, 0, ls.Dead)
		// The worker still holds a valid lease.
		require.NoError(t, store.Of(e.q).Ack(e.ctx, res.Tasks[0]))
		require.ErrorIs(t, e.q.DeleteDead(e.ctx, ""), queue.ErrInvalidTask)
	})
}

func TestDeadAdminMalformedLevel(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newAdminEnv(t, b)
		tk := e.dead(t, 1, "boom")
		key := "{" + e.q.Config().Namespace + ":q}:s:" + tk.ID
		st := map[string]string{}
		require.NoError(t, json.Unmarshal([]byte(b.Client.Get(e.ctx, key).Val()), &st))
		st["l"], st["al"] = "9", ""
		raw, err := json.Marshal(st)
		require.NoError(t, err)
		require.NoError(t, b.Client.Set(e.ctx, key, raw, 0).Err())
		err = e.q.RequeueDead(e.ctx, tk.ID, queue.RequeueDeadOptions{})
		require.ErrorIs(t, err, queue.ErrMalformedRecord)
		require.Contains(t, err.Error(), `level "9"`)
		dead, err := e.q.DeadTasks(e.ctx, 0, 10)
		require.NoError(t, err)
		require.Len(t, dead, 1, "nothing changed")
		require.NoError(t, e.q.DeleteDead(e.ctx, tk.ID))
		dead, err = e.q.DeadTasks(e.ctx, 0, 10)
		require.NoError(t, err)
		require.Empty(t, dead)
	})
}

// An error says "overtake:" once and names the task once.
func TestErrorsHaveOnePrefix(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newAdminEnv(t, b)
		err := e.q.RequeueDead(e.ctx, "nosuch", queue.RequeueDeadOptions{})
		require.ErrorIs(t, err, queue.ErrTaskNotFound)
		require.Equal(t, `overtake: requeue dead: task not found: "nosuch"`, err.Error())
		_, err = store.Of(e.q).SaveCheckpoint(e.ctx, "nosuch", "tok", []byte("x"))
		require.Error(t, err)
		require.Equal(t, 1, strings.Count(err.Error(), "overtake:"), err.Error())
		require.NotContains(t, err.Error(), "nosuch", "the caller names the task")
	})
}
