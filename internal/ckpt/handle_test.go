package ckpt_test

import (
	"github.com/overtake/overtake/internal/ckpt"

	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/queue"
)

func TestHandleFresh(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	h := ckpt.New(s, task, "lease-1")
	assert.Equal(t, task.ID, h.TaskID())
	assert.False(t, h.Resumed())
	assert.Nil(t, h.Bytes())
	assert.Zero(t, h.Seq())
	assert.Zero(t, h.SaveCount())
}

func TestHandleRoundTrip(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	ctx := context.Background()
	h := ckpt.New(s, task, "lease-1")

	buf := []byte("row=10")
	require.NoError(t, h.Save(ctx, buf))
	buf[0] = 'X' // Save copied the data
	require.NoError(t, h.Save(ctx, []byte("row=20")))
	assert.Equal(t, []byte("row=20"), h.Bytes())
	assert.EqualValues(t, 2, h.Seq())
	assert.Equal(t, 2, h.SaveCount())

	// The next run, under a new lease, resumes from the newest checkpoint.
	next := ckpt.New(s, s.Lease(task, "lease-2"), "lease-2")
	assert.True(t, next.Resumed())
	assert.Equal(t, []byte("row=20"), next.Bytes())
	assert.EqualValues(t, 2, next.Seq())
	assert.Zero(t, next.SaveCount())

	// An empty save clears the checkpoint.
	require.NoError(t, next.Save(ctx, nil))
	assert.Empty(t, next.Bytes())
	assert.EqualValues(t, 3, next.Seq())
	assert.False(t, ckpt.New(s, s.Lease(task, "lease-3"), "lease-3").Resumed())
}

func TestHandleFencing(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	ctx := context.Background()
	stale := ckpt.New(s, task, "lease-1")
	require.NoError(t, stale.Save(ctx, []byte("old")))

	// The lease expires and another worker leases the task.
	fresh := ckpt.New(s, s.Lease(task, "lease-2"), "lease-2")
	require.NoError(t, fresh.Save(ctx, []byte("new")))

	err := stale.Save(ctx, []byte("stale overwrite"))
	require.ErrorIs(t, err, queue.ErrLeaseLost)
	assert.Contains(t, err.Error(), "checkpoint: save task "+task.ID)
	assert.Equal(t, []byte("old"), stale.Bytes(), "a failed save changes nothing")
	assert.EqualValues(t, 1, stale.Seq())
	assert.Equal(t, 1, stale.SaveCount())

	data, seq := s.Checkpoint(task.ID)
	assert.Equal(t, []byte("new"), data)
	assert.EqualValues(t, 2, seq)
}

func TestHandleMaxBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		clientMax int
		serverMax int
		size      int
		wantErr   string
		wantCalls int
	}{
		{name: "under", clientMax: 4, size: 4, wantCalls: 1},
		{name: "client limit", clientMax: 4, size: 5, wantCalls: 0,
			wantErr: "5 bytes exceed the limit of 4: overtake: checkpoint too large"},
		{name: "no client limit", clientMax: 0, serverMax: 4, size: 5, wantCalls: 1,
			wantErr: "5 bytes: overtake: checkpoint too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, task := setup(t)
			s.MaxBytes = tt.serverMax
			h := ckpt.New(s, task, "lease-1", ckpt.WithMaxBytes(tt.clientMax))
			err := h.Save(context.Background(), make([]byte, tt.size))
			assert.Equal(t, tt.wantCalls, s.Calls())
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, queue.ErrCheckpointTooLarge)
			assert.ErrorContains(t, err, tt.wantErr)
			assert.Nil(t, h.Bytes())
		})
	}
}

type ctxKey struct{}

// probeSaver records the context it is called with.
type probeSaver struct {
	err, deadlineSet bool
	value            any
	block            bool
}

func (p *probeSaver) SaveCheckpoint(ctx context.Context, _, _ string, _ []byte) (int64, error) {
	p.err = ctx.Err() != nil
	_, p.deadlineSet = ctx.Deadline()
	p.value = ctx.Value(ctxKey{})
	if p.block {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return 1, nil
}

func TestHandleSaveAfterCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "span"))
	cancel(errors.New("preempted"))

	p := &probeSaver{}
	h := ckpt.New(p, &queue.TaskInfo{Type: "x"}, "lease-1")
	require.NoError(t, h.Save(ctx, []byte("state")))
	assert.False(t, p.err, "the saver must see a live context")
	assert.True(t, p.deadlineSet, "the save timeout bounds the call")
	assert.Equal(t, "span", p.value, "values survive")

	// Also through the fencing fake, which refuses cancelled contexts.
	s, task := setup(t)
	require.NoError(t, ckpt.New(s, task, "lease-1").Save(ctx, []byte("state")))
}

func TestHandleSaveTimeout(t *testing.T) {
	t.Parallel()
	p := &probeSaver{block: true}
	h := ckpt.New(p, &queue.TaskInfo{Type: "x"}, "lease-1", ckpt.WithSaveTimeout(10*time.Millisecond))
	err := h.Save(context.Background(), []byte("state"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Nil(t, h.Bytes())
	assert.Zero(t, h.SaveCount())
}

func TestHandleOnSave(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	var obs recorder
	h := ckpt.New(s, task, "lease-1", ckpt.WithObserver(&obs), ckpt.WithSaveTimeout(0), ckpt.WithCodec(nil))
	ctx := context.Background()
	require.NoError(t, h.Save(ctx, []byte("abc")))
	require.NoError(t, h.Save(ctx, []byte("abcdef")))
	s.Fail(errors.New("redis down"))
	require.EqualError(t, h.Save(ctx, []byte("x")), "checkpoint: save task "+task.ID+": redis down")
	assert.Equal(t, []string{"3@1", "6@2"}, obs.saved, "no hook for a failed save")
}

// recorder is an Observer that records what it is told.
type recorder struct {
	saved  []string
	stored []int
}

func (r *recorder) CheckpointSaved(size int, seq int64) {
	r.saved = append(r.saved, fmt.Sprintf("%d@%d", size, seq))
}

func (r *recorder) ResultStored(size int) { r.stored = append(r.stored, size) }

// Init makes a Handle in place, as New does, without allocating for a
// task with no checkpoint (what a run of the runtime costs).
func TestHandleInit(t *testing.T) {
	s, task := setup(t)
	var h ckpt.Handle
	var obs recorder
	n := testing.AllocsPerRun(100, func() {
		h.Init(s, task, "lease-1", ckpt.WithMaxBytes(10), ckpt.WithResults(s, 3), ckpt.WithObserver(&obs),
			ckpt.WithSaveTimeout(time.Second))
	})
	assert.Zero(t, n, "allocations per Init")
	require.NoError(t, h.Save(context.Background(), []byte("abc")))
	assert.Equal(t, []string{"3@1"}, obs.saved)
	require.ErrorIs(t, h.Save(context.Background(), make([]byte, 11)), queue.ErrCheckpointTooLarge)

	// Init again starts the next run over: the saves counted are its own.
	h.Init(s, s.Lease(task, "lease-2"), "lease-2")
	assert.True(t, h.Resumed())
	assert.Equal(t, []byte("abc"), h.Bytes())
	assert.EqualValues(t, 1, h.Seq())
	assert.Zero(t, h.SaveCount())
	require.NoError(t, h.Save(context.Background(), make([]byte, 11)), "the limit was the earlier run's")
	assert.Len(t, obs.saved, 1, "the observer was the earlier run's")
}

func TestHandleConcurrentSaves(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	h := ckpt.New(s, task, "lease-1")
	const writers, saves = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range saves {
				assert.NoError(t, h.Save(context.Background(), fmt.Appendf(nil, "%d-%d", w, i)))
			}
		})
		wg.Go(func() {
			for range saves {
				_, _, _ = h.Bytes(), h.Seq(), h.SaveCount()
			}
		})
	}
	wg.Wait()
	data, seq := s.Checkpoint(task.ID)
	assert.EqualValues(t, writers*saves, seq)
	assert.EqualValues(t, writers*saves, h.Seq())
	assert.Equal(t, writers*saves, h.SaveCount())
	assert.Equal(t, data, h.Bytes(), "the handle holds what the store holds")
}

func TestNewPanics(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	assert.PanicsWithValue(t, "checkpoint: nil Saver", func() { ckpt.New(nil, task, "lease-1") })
	assert.PanicsWithValue(t, "checkpoint: nil task", func() { ckpt.New(s, nil, "lease-1") })
}

func TestContext(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	h := ckpt.New(s, task, "lease-1")
	got, ok := ckpt.FromContext(ckpt.NewContext(context.Background(), h))
	assert.True(t, ok)
	assert.Same(t, h, got)

	_, ok = ckpt.FromContext(context.Background())
	assert.False(t, ok)
	_, ok = ckpt.FromContext(ckpt.NewContext(context.Background(), nil))
	assert.False(t, ok)
}

func TestHandleSaveResult(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	ctx := context.Background()
	err := ckpt.New(s, task, "lease-1").SaveResult(ctx, []byte("r"))
	require.ErrorIs(t, err, ckpt.ErrNoRunningTask, "no ResultSaver")

	var obs recorder
	h := ckpt.New(s, task, "lease-1", ckpt.WithResults(s, 3), ckpt.WithObserver(&obs))
	require.NoError(t, h.SaveResult(ctx, []byte("abc")))
	err = h.SaveResult(ctx, []byte("abcd"))
	require.ErrorIs(t, err, queue.ErrResultTooLarge)
	require.ErrorContains(t, err, "4 bytes exceed the limit of 3")
	assert.Equal(t, 1, s.Calls(), "refused before the saver")
	assert.Equal(t, []byte("abc"), s.Result(task.ID))
	assert.Equal(t, []int{3}, obs.stored, "no hook for a refused result")
}
