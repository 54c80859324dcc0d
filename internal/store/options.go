package store

import (
	"fmt"
	"maps"
	"time"
)

// Option sets a property of a task at enqueue.
type Option func(c *Store, t *Task) error

// Level sets the priority level, 0..Levels-1; higher is more urgent.
func Level(l int) Option {
	if l >= 0 && l < len(levelOptions) {
		return levelOptions[l]
	}
	return level(l)
}

// levelOptions are the Options of the levels most queues have, made once:
// Level(l) is passed to nearly every Enqueue, and each closure made anew
// was an allocation.
var levelOptions = func() (o [16]Option) {
	for l := range o {
		o[l] = level(l)
	}
	return o
}()

// level makes Level's Option.
func level(l int) Option {
	return func(c *Store, t *Task) error {
		if l < 0 || l >= c.cfg.Levels {
			return fmt.Errorf("%w: %d is outside 0..%d", ErrInvalidLevel, l, c.cfg.Levels-1)
		}
		t.Level = l
		return nil
	}
}

// LevelNamed sets the priority level by its name ("high").
func LevelNamed(name string) Option {
	return func(c *Store, t *Task) error {
		l, err := c.LevelByName(name)
		t.Level = l
		return err
	}
}

// Class sets the logical priority class, whose level comes from
// Config.Classes; the class is kept on the record for monitoring.
func Class(name string) Option {
	return func(c *Store, t *Task) error {
		l, ok := c.cfg.Classes[name]
		if !ok {
			return fmt.Errorf("%w: unknown priority class %q", ErrInvalidLevel, name)
		}
		t.Level, t.Class = l, name
		return nil
	}
}

// ID sets the task's ID; enqueueing a second task with the same ID fails
// with ErrDuplicateTask while the first one's record exists.
func ID(id string) Option {
	return func(_ *Store, t *Task) error {
		if id == "" {
			return fmt.Errorf("%w: empty ID", ErrInvalidTask)
		}
		t.ID = id
		return nil
	}
}

// MaxRetries sets how many failed attempts are retried before the task is
// dead-lettered; 0 means none. Without it a task has DefaultMaxRetries.
func MaxRetries(n int) Option {
	return func(_ *Store, t *Task) error {
		if n < 0 {
			return fmt.Errorf("%w: negative MaxRetries %d", ErrInvalidTask, n)
		}
		t.MaxRetries = n
		return nil
	}
}

// Timeout bounds each run of the handler.
func Timeout(d time.Duration) Option {
	return func(_ *Store, t *Task) error {
		if d < 0 {
			return fmt.Errorf("%w: negative Timeout %v", ErrInvalidTask, d)
		}
		t.Timeout = d
		return nil
	}
}

// ProcessAt delays the task until at.
func ProcessAt(at time.Time) Option {
	return func(_ *Store, t *Task) error { t.ProcessAt = at; return nil }
}

// ProcessIn delays the task by d.
func ProcessIn(d time.Duration) Option {
	return func(c *Store, t *Task) error { t.ProcessAt = c.cfg.Clock().Add(d); return nil }
}

// Preemptible sets whether the running task may give way to more urgent
// work. Tasks are preemptible unless this says otherwise.
func Preemptible(ok bool) Option {
	return func(_ *Store, t *Task) error { t.NotPreemptible = !ok; return nil }
}

// Headers adds propagation headers (such as W3C trace context) to the task.
func Headers(h map[string]string) Option {
	return func(_ *Store, t *Task) error {
		if t.Headers == nil {
			t.Headers = make(map[string]string, len(h))
		}
		maps.Copy(t.Headers, h)
		return nil
	}
}
