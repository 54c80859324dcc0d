// Package mirror converts the storage layer's types (internal/store) to
// their public twins in package queue for the runtime, which holds the
// store's records and hands them to handlers and checkpoints as queue's
// types.
//
// Package queue owns the types users read; internal/store keeps a twin
// of each with the same fields in the same order (queue/mirror.go says
// why, and queue's TestTypesMirrorStore checks the layouts field by
// field). A *store.Info and a *queue.TaskInfo are then one memory layout,
// so the conversions here are pointer conversions: free, with no copy or
// allocation per task.
package mirror

import (
	"context"
	"unsafe"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// TaskInfo returns the store's record i as the *queue.TaskInfo handlers
// get: the same memory.
func TaskInfo(i *store.Info) *queue.TaskInfo { return (*queue.TaskInfo)(unsafe.Pointer(i)) }

// Info returns t, a record the store returned as a *queue.TaskInfo, as the
// store's *store.Info: the same memory.
func Info(t *queue.TaskInfo) *store.Info { return (*store.Info)(unsafe.Pointer(t)) }

// Option returns the store's option o (store.Tick) as a queue.Option, a
// struct of one store.Option.
func Option(o store.Option) queue.Option { return *(*queue.Option)(unsafe.Pointer(&o)) }

// PauseModes returns the paused levels m with queue's modes (nil for nil).
func PauseModes(m map[int]store.PauseMode) map[int]queue.PauseMode {
	if m == nil {
		return nil
	}
	out := make(map[int]queue.PauseMode, len(m))
	for l, mode := range m {
		out[l] = queue.PauseMode(mode)
	}
	return out
}

// Results is a store as a ckpt.ResultSaver, whose SaveResult takes the
// task as the *queue.TaskInfo its handler got.
type Results struct{ *store.Store }

// SaveResult stores data as the result of t under token
// (store.Store.SaveResult).
func (r Results) SaveResult(ctx context.Context, t *queue.TaskInfo, token string, data []byte) error {
	return r.Store.SaveResult(ctx, Info(t), token, data)
}
