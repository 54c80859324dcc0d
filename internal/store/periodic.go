package store

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Periodic tasks: the runtime enqueues each tick of a schedule with the
// Tick option. The enqueue script compares the tick with the schedule's
// last, periodic:<name>, and sets it in the same call, so of all the
// runtimes that try a tick exactly one decides it (ErrTickTaken for the
// others), and a tick older than the last is never enqueued.

// ErrTickTaken is returned by Enqueue with Tick when the schedule's tick,
// or a later one, was decided already (by another runtime, most often).
var ErrTickTaken = errors.New("overtake: periodic tick enqueued already")

// periodic is the key of schedule name's last tick (ms).
func (k keys) periodic(name string) string { return k.prefix + "periodic:" + name }

// Tick makes the task schedule name's tick at: it is enqueued only if at
// is after the schedule's last tick, which it becomes, and else refused
// with ErrTickTaken. Its ID is "<name>@<at, RFC 3339 in UTC>". A task
// with Tick is enqueued alone, not in a batch.
func Tick(name string, at time.Time) Option {
	return func(_ *Store, t *Task) error {
		if name == "" {
			return fmt.Errorf("%w: a periodic tick needs a schedule name", ErrInvalidTask)
		}
		t.schedule, t.tick = name, at.UnixMilli()
		t.ID = name + "@" + at.UTC().Format(time.RFC3339Nano)
		return nil
	}
}

// tickArg is the tick of t as enqueue.lua's ARGV[9] "k" (a string).
func tickArg(t *Task) string { return strconv.Quote(strconv.FormatInt(t.tick, 10)) }
