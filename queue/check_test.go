package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// Check answers as Enqueue would, and writes nothing: a misspelt level
// name, an unknown class, a level out of range, a negative retry count
// and an oversized payload are refused with Enqueue's errors; a good task
// passes and the queue stays empty.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	b := testredis.Mini(t)
	q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, MaxPayloadBytes: 4,
		Classes: map[string]int{"paying": 2}})
	require.NoError(t, err)

	require.NoError(t, q.Check(queue.NewTask("report", nil, queue.LevelNamed("high"))))
	require.NoError(t, q.Check(queue.NewTask("report", nil), queue.Class("paying"), queue.Timeout(time.Second)))
	for name, c := range map[string]struct {
		task *queue.Task
		opts []queue.Option
		want error
	}{
		"level name":   {queue.NewTask("report", nil, queue.LevelNamed("hgih")), nil, queue.ErrInvalidLevel},
		"class":        {queue.NewTask("report", nil), []queue.Option{queue.Class("gold")}, queue.ErrInvalidLevel},
		"level":        {queue.NewTask("report", nil), []queue.Option{queue.Level(3)}, queue.ErrInvalidLevel},
		"retries":      {queue.NewTask("report", nil, queue.MaxRetries(-1)), nil, queue.ErrInvalidTask},
		"no type":      {queue.NewTask("", nil), nil, queue.ErrInvalidTask},
		"nil task":     {nil, nil, queue.ErrInvalidTask},
		"payload size": {queue.NewTask("report", []byte("12345")), nil, queue.ErrPayloadTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			err := q.Check(c.task, c.opts...)
			require.ErrorIs(t, err, c.want)
			if c.task != nil {
				_, enqErr := q.Enqueue(ctx, c.task, c.opts...)
				require.ErrorIs(t, enqErr, c.want, "Enqueue refuses what Check refuses")
			}
		})
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	for _, l := range st.Levels {
		require.Zero(t, l.Pending, "Check wrote nothing")
	}
}
