package store

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned by the queue. Each works with errors.Is.
var (
	// ErrDuplicateTask is returned by Enqueue when a task with the same ID
	// exists, or an equal task holds the uniqueness lock (Unique); the
	// message says which.
	ErrDuplicateTask = errors.New("overtake: duplicate task")
	// ErrPayloadTooLarge is returned by Enqueue when a payload exceeds Config.MaxPayloadBytes.
	ErrPayloadTooLarge = errors.New("overtake: payload too large")
	// ErrCheckpointTooLarge is returned when checkpoint state exceeds Config.MaxCheckpointBytes.
	ErrCheckpointTooLarge = errors.New("overtake: checkpoint too large")
	// ErrResultTooLarge is returned when a task's result exceeds
	// Config.MaxResultBytes; nothing was stored.
	ErrResultTooLarge = errors.New("overtake: result too large")
	// ErrLeaseLost is returned to a worker whose lease token is no longer
	// valid: the task was recovered or leased by another worker. The call
	// changed nothing.
	ErrLeaseLost = errors.New("overtake: lease lost")
	// ErrTaskNotFound is returned when no record exists for a task ID.
	ErrTaskNotFound = errors.New("overtake: task not found")
	// ErrInvalidLevel is returned for a level outside 0..Levels-1.
	ErrInvalidLevel = errors.New("overtake: invalid priority level")
	// ErrInvalidTask is returned for a task without a type or with a bad option.
	ErrInvalidTask = errors.New("overtake: invalid task")
	// ErrMalformedRecord wraps a task record that cannot be decoded.
	ErrMalformedRecord = errors.New("overtake: malformed task record")
	// ErrCorrupt is returned when one of the queue's keys holds the wrong
	// type (an operator's mistake, a stray script). The message names the
	// key; the call changed nothing. Tasks behind other keys go on.
	ErrCorrupt = errors.New("overtake: corrupt queue key")
	// ErrSchema is returned when the queue's data was written by another
	// version of the data model; the message names both.
	ErrSchema = errors.New("overtake: queue data is of another schema version")
)

// opError is a queue operation's error: "overtake: <op>: <cause>", with
// the cause's own "overtake: " prefix dropped, so a message never repeats
// it. errors.Is and errors.As see the cause.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return "overtake: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "overtake: ")
}

func (e *opError) Unwrap() error { return e.err }

// wrapf wraps err as the error of the operation format names.
func wrapf(err error, format string, args ...any) error {
	return &opError{op: fmt.Sprintf(format, args...), err: err}
}
