package checkpointtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/overtake/overtake/checkpoint/checkpointtest"
	"github.com/overtake/overtake/queue"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSaver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var s checkpointtest.Saver

	_, err := s.SaveCheckpoint(ctx, "t", "any", nil)
	require.ErrorIs(t, err, queue.ErrLeaseLost, "never leased")

	task := s.Lease(&queue.TaskInfo{ID: "t"}, "a")
	assert.Nil(t, task.Checkpoint)

	seq, err := s.SaveCheckpoint(ctx, "t", "a", []byte("one"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, seq)

	task = s.Lease(task, "b")
	assert.Equal(t, []byte("one"), task.Checkpoint)
	assert.EqualValues(t, 1, task.CheckpointSeq)
	_, err = s.SaveCheckpoint(ctx, "t", "a", []byte("stale"))
	require.ErrorIs(t, err, queue.ErrLeaseLost)

	s.MaxBytes = 2
	_, err = s.SaveCheckpoint(ctx, "t", "b", []byte("big"))
	require.ErrorIs(t, err, queue.ErrCheckpointTooLarge)

	down := errors.New("down")
	s.Fail(down)
	_, err = s.SaveCheckpoint(ctx, "t", "b", []byte("x"))
	require.ErrorIs(t, err, down)
	s.Fail(nil)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.SaveCheckpoint(cctx, "t", "b", []byte("x"))
	require.ErrorIs(t, err, context.Canceled)

	data, seq := s.Checkpoint("t")
	assert.Equal(t, []byte("one"), data)
	assert.EqualValues(t, 1, seq)
	assert.Equal(t, 6, s.Calls())
	data, seq = s.Checkpoint("missing")
	assert.Nil(t, data)
	assert.Zero(t, seq)
}

// Results are limited as the queue limits them: 1 MiB unless
// MaxResultBytes says otherwise, no limit when it is negative.
func TestSaverResultLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var s checkpointtest.Saver
	task := s.Lease(&queue.TaskInfo{ID: "t"}, "a")
	limit := queue.Config{}.WithDefaults().MaxResultBytes
	require.Equal(t, 1<<20, limit)
	require.NoError(t, s.SaveResult(ctx, task, "a", make([]byte, limit)))
	require.ErrorIs(t, s.SaveResult(ctx, task, "a", make([]byte, limit+1)), queue.ErrResultTooLarge, "the queue's default")
	s.MaxResultBytes = 3
	require.ErrorIs(t, s.SaveResult(ctx, task, "a", []byte("four")), queue.ErrResultTooLarge)
	s.MaxResultBytes = -1
	require.NoError(t, s.SaveResult(ctx, task, "a", make([]byte, limit+1)))
	assert.Len(t, s.Result("t"), limit+1)
}
