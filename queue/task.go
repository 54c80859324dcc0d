package queue

import "github.com/overtake/overtake/internal/store"

// Task is a task as a producer builds it: a type, a payload and options
// (Level, ID, MaxRetries, ...), which are the only way to set a property.
// Enqueue stores it and returns its record, a TaskInfo. A Task is not
// changed by Enqueue, so it may be enqueued again (with another ID).
type Task struct {
	typ     string
	payload []byte
	opts    []Option
}

// NewTask returns a task of type typ with payload and options; without
// options it runs at level 0 with DefaultMaxRetries, preemptible. The
// options apply at each Enqueue, before the call's own.
func NewTask(typ string, payload []byte, opts ...Option) *Task {
	return &Task{typ: typ, payload: payload, opts: opts}
}

// Type returns the task's type, which selects its handler.
func (t *Task) Type() string { return t.typ }

// Payload returns the task's payload. The caller must not modify it.
func (t *Task) Payload() []byte { return t.payload }

// record fills st with the store's record of t before options (as
// store.NewTask makes it) and returns it; nil for a nil t (the store
// refuses it). The caller provides st so that a batch takes one
// allocation for all its records: the store copies them.
func (t *Task) record(st *store.Task) *store.Task {
	if t == nil {
		return nil
	}
	*st = store.Task{Info: store.Info{Type: t.typ, Payload: t.payload, MaxRetries: DefaultMaxRetries}}
	return st
}

// options returns t's options followed by opts.
func (t *Task) options(opts []Option) []Option {
	if t == nil || len(t.opts) == 0 {
		return opts
	}
	if len(opts) == 0 {
		return t.opts
	}
	return append(t.opts[:len(t.opts):len(t.opts)], opts...)
}

// DefaultMaxRetries is the retry budget of a task enqueued without
// MaxRetries.
const DefaultMaxRetries = 25
