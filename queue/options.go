package queue

import (
	"time"

	"github.com/overtake/overtake/internal/store"
)

// Option sets a property of a task at enqueue. The functions that return
// one make them (Level, ID, MaxRetries, ...); the zero Option must not be
// passed.
type Option struct {
	apply store.Option
}

// Level sets the priority level, 0..Levels-1; higher is more urgent.
func Level(l int) Option { return Option{store.Level(l)} }

// LevelNamed sets the priority level by its name ("high").
func LevelNamed(name string) Option { return Option{store.LevelNamed(name)} }

// Class sets the logical priority class, whose level comes from
// Config.Classes; the class is kept on the record for monitoring.
func Class(name string) Option { return Option{store.Class(name)} }

// ID sets the task's ID; enqueueing a second task with the same ID fails
// with ErrDuplicateTask while the first one's record exists.
func ID(id string) Option { return Option{store.ID(id)} }

// MaxRetries sets how many failed attempts are retried before the task is
// dead-lettered; 0 means none. Without it a task has DefaultMaxRetries.
func MaxRetries(n int) Option { return Option{store.MaxRetries(n)} }

// Timeout bounds each run of the handler.
func Timeout(d time.Duration) Option { return Option{store.Timeout(d)} }

// ProcessAt delays the task until at.
func ProcessAt(at time.Time) Option { return Option{store.ProcessAt(at)} }

// ProcessIn delays the task by d.
func ProcessIn(d time.Duration) Option { return Option{store.ProcessIn(d)} }

// Preemptible sets whether the running task may give way to more urgent
// work. Tasks are preemptible unless this says otherwise.
func Preemptible(ok bool) Option { return Option{store.Preemptible(ok)} }

// Headers adds propagation headers (such as W3C trace context) to the task.
func Headers(h map[string]string) Option { return Option{store.Headers(h)} }

// Unique refuses the task, with ErrDuplicateTask, while an equal task
// (same queue, type and payload) holds the uniqueness lock for them, as
// asynq's Unique does: from its enqueue until it succeeds or ttl has passed
// since it was due (enqueued, or ProcessAt), whichever comes first. The
// check and the lock are one atomic step of the enqueue, in Enqueue and in
// EnqueueBatch. A task that fails, is retried or dead-lettered keeps the
// lock until ttl ends, so choose a ttl longer than a task waits and runs;
// DeleteDead of a dead-lettered task releases it, RequeueDead keeps it.
// ttl must be at least 1 ms.
func Unique(ttl time.Duration) Option { return Option{store.Unique(ttl)} }
