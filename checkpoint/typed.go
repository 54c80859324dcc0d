package checkpoint

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/overtake/overtake/internal/ckpt"
)

// Load decodes the newest checkpoint of the task running in ctx into a T,
// as JSON. It returns false, and the zero T, when there is
// no checkpoint yet: the first run starts from the beginning. It fails with
// ErrNoCheckpointer when ctx carries no checkpoint and with an error matching
// ErrMalformedCheckpoint when the checkpoint does not decode.
func Load[T any](ctx context.Context) (T, bool, error) {
	var v T
	h, ok := ckpt.FromContext(ctx)
	if !ok {
		return v, false, ErrNoCheckpointer
	}
	data := h.Bytes()
	if len(data) == 0 {
		return v, false, nil
	}
	if err := h.Codec().Unmarshal(data, &v); err != nil {
		var zero T
		return zero, false, fmt.Errorf("%w: task %s: %w", ErrMalformedCheckpoint, h.TaskID(), err)
	}
	return v, true, nil
}

// Save encodes v as JSON and saves it as the checkpoint of the task running
// in ctx, in one round trip, fenced by the run's lease: once the lease is
// lost it fails with an error matching queue.ErrLeaseLost and changes
// nothing. It works after ctx was cancelled (a preempted handler saves on
// its way out). It fails with ErrNoCheckpointer when ctx carries no
// checkpoint.
func Save[T any](ctx context.Context, v T) error {
	h, ok := ckpt.FromContext(ctx)
	if !ok {
		return ErrNoCheckpointer
	}
	return saveValue(ctx, h, v)
}

func saveValue(ctx context.Context, h *ckpt.Handle, v any) error {
	data, err := h.Codec().Marshal(v)
	if err != nil {
		return fmt.Errorf("checkpoint: encode task %s: %w", h.TaskID(), err)
	}
	return h.Save(ctx, data)
}

// Cursor is a typed position in a task's work that is saved at most once
// per interval, for loops that advance often: Set is cheap between saves,
// and Flush saves the latest position when the handler stops. A crash loses
// at most one interval of progress; a preemption, if the handler flushes,
// none. A Cursor is safe for concurrent use.
type Cursor[T any] struct {
	h     *ckpt.Handle
	every time.Duration

	mu    sync.Mutex
	v     T
	dirty bool
	last  time.Time
}

// NewCursor loads the cursor of the task running in ctx (the zero T on the
// first run, see Load). Set saves at most once per every; zero saves on
// every Set.
func NewCursor[T any](ctx context.Context, every time.Duration) (*Cursor[T], error) {
	v, _, err := Load[T](ctx)
	if err != nil {
		return nil, err
	}
	h, _ := ckpt.FromContext(ctx)
	return &Cursor[T]{h: h, every: every, v: v, last: time.Now()}, nil
}

// Value returns the latest position: the last one Set, or the loaded one.
func (c *Cursor[T]) Value() T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v
}

// Resumed reports whether the cursor started from a saved checkpoint.
func (c *Cursor[T]) Resumed() bool { return c.h.Resumed() }

// Set records v as the latest position and saves it if the interval has
// passed since the last save. The position is kept even if the save fails.
func (c *Cursor[T]) Set(ctx context.Context, v T) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.v, c.dirty = v, true
	if time.Since(c.last) < c.every {
		return nil
	}
	return c.flushLocked(ctx)
}

// Flush saves the latest position if it was not saved yet. Call it when the
// handler stops early; like Save it works after ctx was cancelled.
func (c *Cursor[T]) Flush(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil
	}
	return c.flushLocked(ctx)
}

func (c *Cursor[T]) flushLocked(ctx context.Context) error {
	if err := saveValue(ctx, c.h, c.v); err != nil {
		return err
	}
	c.dirty, c.last = false, time.Now()
	return nil
}
