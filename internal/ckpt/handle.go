// Package ckpt is the checkpoint of one run of a task as the runtime
// manages it: a Handle per run, fenced by the run's lease, carried in the
// handler's context for package checkpoint's Load, Save and Cursor, and
// for the task's result (handlers.SetResult).
package ckpt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/overtake/overtake/queue"
)

// Saver stores checkpoint state for a task, fenced by its lease token. It is
// implemented by *queue.Client with one Redis round trip. SaveCheckpoint
// returns the new checkpoint sequence number; it fails with an error
// matching queue.ErrLeaseLost when token is no longer the task's lease, and
// queue.ErrCheckpointTooLarge when data exceeds the queue's limit. A failed
// call changes nothing.
type Saver interface {
	SaveCheckpoint(ctx context.Context, taskID, token string, data []byte) (seq int64, err error)
}

// ResultSaver stores a task's result, fenced by its lease token. It is
// implemented by the queue's store with one Redis round trip. SaveResult
// fails with an error matching queue.ErrLeaseLost when token is no longer
// t's lease, and queue.ErrResultTooLarge when data exceeds the queue's
// limit. A failed call changes nothing.
type ResultSaver interface {
	SaveResult(ctx context.Context, t *queue.TaskInfo, token string, data []byte) error
}

// ErrNoRunningTask is returned by SaveResult when the Handle was made
// without WithResults, and by the public API when a context carries no
// Handle: the code runs outside a handler.
var ErrNoRunningTask = errors.New("overtake: no running task in context")

// Handle is the checkpoint state of one run of a task: the state it started
// from and what it saved since. The runtime makes one per run with Init and
// puts it in the handler's context (ContextKey). A Handle is safe for
// concurrent use.
type Handle struct {
	saver   Saver
	task    *queue.TaskInfo
	taskID  string
	token   string
	resumed bool
	opts    options

	saveMu sync.Mutex // serializes round trips, so Seq only grows

	mu    sync.Mutex // guards the fields below
	data  []byte
	seq   int64
	saves int
}

// New returns the Handle for a run of t, a task as leased under token: it
// takes t's ID, Checkpoint and CheckpointSeq, and saves go to saver under
// token. New panics if saver or t is nil.
func New(saver Saver, t *queue.TaskInfo, token string, opts ...Option) *Handle {
	h := new(Handle)
	h.Init(saver, t, token, opts...)
	return h
}

// Init makes h the Handle for a run of t, as New does, in place: the
// runtime keeps each run's Handle inside the run, which saves allocating
// one. h must not be in use. Init panics if saver or t is nil.
func (h *Handle) Init(saver Saver, t *queue.TaskInfo, token string, opts ...Option) {
	if saver == nil {
		panic("checkpoint: nil Saver")
	}
	if t == nil {
		panic("checkpoint: nil task")
	}
	h.saver, h.task, h.taskID, h.token = saver, t, t.ID, token
	h.resumed = len(t.Checkpoint) > 0
	h.opts.apply(opts)
	h.data, h.seq, h.saves = nil, t.CheckpointSeq, 0
	if h.resumed {
		h.data = bytes.Clone(t.Checkpoint)
	}
}

// TaskID returns the ID of the task the Handle belongs to.
func (h *Handle) TaskID() string { return h.taskID }

// Resumed reports whether the run started from a checkpoint saved by an
// earlier run (one that was preempted, shut down, crashed or yielded).
func (h *Handle) Resumed() bool { return h.resumed }

// Bytes returns the newest checkpoint: the last one this run saved, or the
// one it started from; nil if there is none. The caller must not modify it.
func (h *Handle) Bytes() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.data
}

// Seq returns the sequence number of the checkpoint Bytes returns, 0 if none
// was ever saved for the task.
func (h *Handle) Seq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// SaveCount returns how many saves succeeded during this run.
func (h *Handle) SaveCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.saves
}

// Save stores data as the task's checkpoint with one call to the Saver and,
// on success, makes it what Bytes and Seq return. Data is copied, so the
// caller may reuse its buffer. Empty data clears the checkpoint.
//
// Save works after ctx was cancelled, which is when a preempted handler
// saves: it keeps ctx's values but not its cancellation or deadline, and is
// bounded by the save timeout instead (see WithSaveTimeout).
//
// It fails with an error matching queue.ErrCheckpointTooLarge when data is
// larger than WithMaxBytes allows (the Saver is not called), or with the
// Saver's error, such as queue.ErrLeaseLost. Concurrent saves are
// serialized.
func (h *Handle) Save(ctx context.Context, data []byte) error {
	if h.opts.maxBytes > 0 && len(data) > h.opts.maxBytes {
		return fmt.Errorf("checkpoint: task %s: %d bytes exceed the limit of %d: %w",
			h.taskID, len(data), h.opts.maxBytes, queue.ErrCheckpointTooLarge)
	}
	buf := bytes.Clone(data)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.saveTimeout)
	defer cancel()

	h.saveMu.Lock()
	seq, err := h.saver.SaveCheckpoint(ctx, h.taskID, h.token, buf)
	if err == nil {
		h.mu.Lock()
		h.data, h.seq = buf, seq
		h.saves++
		h.mu.Unlock()
	}
	h.saveMu.Unlock()

	if err != nil {
		return fmt.Errorf("checkpoint: save task %s: %w", h.taskID, err)
	}
	if h.opts.observer != nil {
		h.opts.observer.CheckpointSaved(len(buf), seq)
	}
	return nil
}

// Codec returns the codec of the typed helpers (checkpoint.Load, Save,
// Cursor) for this handle: JSON unless WithCodec chose another.
func (h *Handle) Codec() Codec { return h.opts.codec }

// SaveResult stores data as the task's result with one call to the
// ResultSaver WithResults gave, fenced by the run's lease. Like Save it
// works after ctx was cancelled and is bounded by the save timeout. It
// fails with an error matching queue.ErrResultTooLarge when data is larger
// than WithResults allows (the saver is not called), ErrNoRunningTask
// without a ResultSaver, or the saver's error, such as queue.ErrLeaseLost.
func (h *Handle) SaveResult(ctx context.Context, data []byte) error {
	if h.opts.results == nil {
		return fmt.Errorf("result: task %s: %w", h.taskID, ErrNoRunningTask)
	}
	if h.opts.maxResult > 0 && len(data) > h.opts.maxResult {
		return fmt.Errorf("result: task %s: %d bytes exceed the limit of %d: %w",
			h.taskID, len(data), h.opts.maxResult, queue.ErrResultTooLarge)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.saveTimeout)
	defer cancel()
	if err := h.opts.results.SaveResult(ctx, h.task, h.token, data); err != nil {
		return fmt.Errorf("result: save task %s: %w", h.taskID, err)
	}
	if h.opts.observer != nil {
		h.opts.observer.ResultStored(len(data))
	}
	return nil
}
