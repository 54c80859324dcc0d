package checkpoint_test

import (
	"github.com/overtake/overtake/internal/ckpt"

	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/queue"
)

type progress struct {
	Row  int    `json:"row"`
	File string `json:"file"`
}

func TestNoCheckpointer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, ok, err := checkpoint.Load[progress](ctx)
	assert.False(t, ok)
	assert.ErrorIs(t, err, checkpoint.ErrNoCheckpointer)
	assert.ErrorIs(t, checkpoint.Save(ctx, progress{}), checkpoint.ErrNoCheckpointer)
	_, err = checkpoint.NewCursor[int](ctx, 0)
	assert.ErrorIs(t, err, checkpoint.ErrNoCheckpointer)
}

func TestLoadSave(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	ctx := s.Context(context.Background(), task)

	p, ok, err := checkpoint.Load[progress](ctx)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Zero(t, p)

	require.NoError(t, checkpoint.Save(ctx, progress{Row: 7, File: "a.csv"}))
	p, ok, err = checkpoint.Load[progress](ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, progress{Row: 7, File: "a.csv"}, p)

	// The next run sees it too.
	next := s.Context(context.Background(), s.Lease(task, "lease-2"))
	p, ok, err = checkpoint.Load[progress](next)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, 7, p.Row)

	// A checkpoint of another shape does not decode.
	_, ok, err = checkpoint.Load[[]int](next)
	assert.False(t, ok)
	assert.ErrorIs(t, err, checkpoint.ErrMalformedCheckpoint)

	// An unencodable value is not saved.
	assert.ErrorContains(t, checkpoint.Save(next, make(chan int)), "checkpoint: encode task "+task.ID)
}

// upperCodec is a toy codec for strings.
type upperCodec struct{}

func (upperCodec) Marshal(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, errors.New("strings only")
	}
	return []byte("S:" + s), nil
}

func (upperCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*string)
	if !ok || len(data) < 2 || string(data[:2]) != "S:" {
		return errors.New("not a string")
	}
	*p = string(data[2:])
	return nil
}

func TestWithCodec(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	h := ckpt.New(s, task, "lease-1", ckpt.WithCodec(upperCodec{}))
	ctx := ckpt.NewContext(context.Background(), h)
	require.NoError(t, checkpoint.Save(ctx, "page-3"))
	assert.Equal(t, []byte("S:page-3"), h.Bytes())
	v, ok, err := checkpoint.Load[string](ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "page-3", v)
}

func TestCursor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		every     time.Duration
		wantSaves int // after three Sets
	}{
		{name: "every set", every: 0, wantSaves: 3},
		{name: "throttled", every: time.Hour, wantSaves: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, task := setup(t)
			h := ckpt.New(s, task, "lease-1")
			ctx := ckpt.NewContext(context.Background(), h)
			c, err := checkpoint.NewCursor[int](ctx, tt.every)
			require.NoError(t, err)
			assert.False(t, c.Resumed())
			for i := 1; i <= 3; i++ {
				require.NoError(t, c.Set(ctx, i))
			}
			assert.Equal(t, 3, c.Value())
			assert.Equal(t, tt.wantSaves, h.SaveCount())

			// Flush after cancellation saves what is pending, once.
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			require.NoError(t, c.Flush(cctx))
			require.NoError(t, c.Flush(cctx))
			assert.Equal(t, max(tt.wantSaves, 1), h.SaveCount())

			resumed := s.Context(context.Background(), s.Lease(task, "lease-2"))
			c2, err := checkpoint.NewCursor[int](resumed, tt.every)
			require.NoError(t, err)
			assert.True(t, c2.Resumed())
			assert.Equal(t, 3, c2.Value())
		})
	}
}

func TestCursorSaveFails(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	ctx := s.Context(context.Background(), task)
	c, err := checkpoint.NewCursor[int](ctx, 0)
	require.NoError(t, err)
	s.Lease(task, "lease-2") // lost the lease
	require.ErrorIs(t, c.Set(ctx, 5), queue.ErrLeaseLost)
	assert.Equal(t, 5, c.Value(), "the position is kept")
	require.ErrorIs(t, c.Flush(ctx), queue.ErrLeaseLost, "still pending")
}

func TestCursorMalformed(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	ctx := s.Context(context.Background(), task)
	require.NoError(t, checkpoint.Save(ctx, "text"))
	_, err := checkpoint.NewCursor[int](ctx, 0)
	assert.ErrorIs(t, err, checkpoint.ErrMalformedCheckpoint)
}
