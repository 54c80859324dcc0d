package queue

import (
	"unsafe"

	"github.com/overtake/overtake/internal/store"
)

// The public types of this package and their twins in internal/store.
//
// queue owns the types users read (go doc shows their fields here), and
// the storage layer, below queue, keeps a twin of each with the same
// fields in the same order. Config, Rates, WorkerPool and
// RequeueDeadOptions convert with a plain conversion, checked by the
// compiler. The others hold a field of a named twin (TaskInfo.State,
// LevelStats.Paused, ...), which Go's conversion rules do not look
// through, so their pointers are converted with unsafe.Pointer: the two
// types have one memory layout, which TestTypesMirrorStore checks field
// by field. A conversion is free: a handler gets the store's record of
// its task as a *TaskInfo, with no copy and no allocation per task.
// Package internal/mirror does the same for the runtime.

// taskInfo returns the store's record i as a *TaskInfo (nil for nil).
func taskInfo(i *store.Info) *TaskInfo { return (*TaskInfo)(unsafe.Pointer(i)) }

// taskInfos returns the Info of each of ts as a *TaskInfo, nil for a nil
// one (and nil for nil ts).
func taskInfos(ts []*store.Task) []*TaskInfo {
	if ts == nil {
		return nil
	}
	out := make([]*TaskInfo, len(ts))
	for i, t := range ts {
		if t != nil {
			out[i] = taskInfo(&t.Info)
		}
	}
	return out
}

// storeOptions returns opts as the store's options. An Option is a
// struct of one store.Option, so the two slices share their memory: no
// copy per Enqueue.
func storeOptions(opts []Option) []store.Option {
	return unsafe.Slice((*store.Option)(unsafe.Pointer(unsafe.SliceData(opts))), len(opts))
}

// stats returns the store's snapshot s as a *Stats.
func stats(s *store.Stats) *Stats {
	if s == nil {
		return nil
	}
	out := &Stats{Queue: s.Queue, Workers: s.Workers, Levels: mirrorSlice[LevelStats](s.Levels)}
	if s.PoolRates != nil {
		out.PoolRates = make(map[string]Rates, len(s.PoolRates))
		for k, v := range s.PoolRates {
			out.PoolRates[k] = Rates(v)
		}
	}
	return out
}

// mirrorSlice returns s, a slice of a store type, as a slice of its twin
// T, sharing its memory. Only for the pairs TestTypesMirrorStore checks.
func mirrorSlice[T, S any](s []S) []T {
	if s == nil {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
