package queue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

func TestMain(m *testing.M) { testredis.Main(m) }

// A task's own options apply first, then the call's; the Task itself is
// not changed, so it can be enqueued again. EnqueueBatch applies each
// task's options to that task only.
func TestTaskOptions(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix})
		require.NoError(t, err)

		task := queue.NewTask("mail", []byte("hi"), queue.Level(1), queue.ID("a"))
		require.Equal(t, "mail", task.Type())
		require.Equal(t, []byte("hi"), task.Payload())
		got, err := q.Enqueue(ctx, task, queue.Level(2))
		require.NoError(t, err)
		require.Equal(t, "a", got.ID)
		require.Equal(t, 2, got.Level, "the call's option comes last")
		again, err := q.Enqueue(ctx, task, queue.ID("b"))
		require.NoError(t, err)
		require.Equal(t, "b", again.ID)
		require.Equal(t, 1, again.Level, "the task's option, unchanged by the first Enqueue")

		out, err := q.EnqueueBatch(ctx, []*queue.Task{
			queue.NewTask("mail", nil, queue.Level(2)),
			queue.NewTask("mail", nil, queue.Level(7)),
			queue.NewTask("mail", nil),
		}, queue.Timeout(-1))
		require.ErrorIs(t, err, queue.ErrInvalidTask, "the call's options apply to every task")
		require.Equal(t, []*queue.TaskInfo{nil, nil, nil}, out)
		out, err = q.EnqueueBatch(ctx, []*queue.Task{
			queue.NewTask("mail", nil, queue.Level(2)),
			queue.NewTask("mail", nil, queue.Level(7)),
			queue.NewTask("mail", nil),
			nil,
		})
		require.ErrorIs(t, err, queue.ErrInvalidLevel)
		require.ErrorContains(t, err, "task 1:")
		require.ErrorIs(t, err, queue.ErrInvalidTask)
		require.ErrorContains(t, err, "task 3:")
		require.Len(t, out, 4)
		require.Equal(t, 2, out[0].Level)
		require.Nil(t, out[1])
		require.Zero(t, out[2].Level)
		require.Nil(t, out[3])
		_, err = q.Enqueue(ctx, nil)
		require.ErrorIs(t, err, queue.ErrInvalidTask)
	})
}

// MaxRetries means the same as an option and as read back: the retry
// budget, 0 for none; a task enqueued without it has DefaultMaxRetries.
func TestMaxRetriesReadsBack(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix})
		require.NoError(t, err)
		for _, tc := range []struct {
			opts []queue.Option
			want int
		}{
			{nil, queue.DefaultMaxRetries},
			{[]queue.Option{queue.MaxRetries(0)}, 0},
			{[]queue.Option{queue.MaxRetries(3)}, 3},
		} {
			got, err := q.Enqueue(ctx, queue.NewTask("mail", nil, tc.opts...))
			require.NoError(t, err)
			require.Equal(t, tc.want, got.MaxRetries)
			read, err := q.Inspect(ctx, got.ID)
			require.NoError(t, err)
			require.Equal(t, tc.want, read.MaxRetries)
			require.Equal(t, tc.want > 0, read.RetriesLeft())
		}
		_, err = q.Enqueue(ctx, queue.NewTask("mail", nil, queue.MaxRetries(-1)))
		require.ErrorIs(t, err, queue.ErrInvalidTask)
	})
}
