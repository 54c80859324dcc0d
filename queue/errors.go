package queue

import "github.com/overtake/overtake/internal/store"

// Errors returned by the queue. Each works with errors.Is.
var (
	// ErrDuplicateTask is returned by Enqueue when a task with the same ID exists.
	ErrDuplicateTask = store.ErrDuplicateTask
	// ErrPayloadTooLarge is returned by Enqueue when a payload exceeds Config.MaxPayloadBytes.
	ErrPayloadTooLarge = store.ErrPayloadTooLarge
	// ErrCheckpointTooLarge is returned when checkpoint state exceeds Config.MaxCheckpointBytes.
	ErrCheckpointTooLarge = store.ErrCheckpointTooLarge
	// ErrResultTooLarge is returned when a handler's result exceeds
	// Config.MaxResultBytes; nothing was stored.
	ErrResultTooLarge = store.ErrResultTooLarge
	// ErrLeaseLost is returned to a worker whose lease token is no longer
	// valid: the task was recovered or leased by another worker. The call
	// changed nothing.
	ErrLeaseLost = store.ErrLeaseLost
	// ErrTaskNotFound is returned when no record exists for a task ID.
	ErrTaskNotFound = store.ErrTaskNotFound
	// ErrInvalidLevel is returned for a level outside 0..Levels-1.
	ErrInvalidLevel = store.ErrInvalidLevel
	// ErrInvalidTask is returned for a task without a type or with a bad option.
	ErrInvalidTask = store.ErrInvalidTask
	// ErrMalformedRecord wraps a task record that cannot be decoded.
	ErrMalformedRecord = store.ErrMalformedRecord
	// ErrCorrupt is returned when one of the queue's keys holds the wrong
	// type (an operator's mistake, a stray script). The message names the
	// key; the call changed nothing. Tasks behind other keys go on.
	ErrCorrupt = store.ErrCorrupt
	// ErrSchema is returned when the queue's data was written by another
	// version of the data model; the message names both.
	ErrSchema = store.ErrSchema
)

// ErrShapeMismatch is returned by New, runtime.New and a client's first
// calls when the config's Levels or LevelNames differ from the shape the
// queue holds in Redis, recorded by the first process that opened it, or
// one of its Classes maps to another level than the stored shape's (a
// config with fewer Classes, or none, matches); the message names both.
var ErrShapeMismatch = store.ErrShapeMismatch

// ErrTaskFinished is returned by Cancel for a task that is done or dead:
// nothing changed. The message names the state.
var ErrTaskFinished = store.ErrTaskFinished

// ErrNotDead is returned by RequeueDead and DeleteDead for a task that
// is not dead-lettered.
var ErrNotDead = store.ErrNotDead

// ErrInvalidConfig is returned by New for a Config it cannot use; the
// message says which field and why.
var ErrInvalidConfig = store.ErrInvalidConfig

// ErrNotReplicated is returned, with Config.WaitReplicas set, by a write
// that fewer replicas than asked confirmed in time; it was done on the
// primary.
var ErrNotReplicated = store.ErrNotReplicated

// ErrNoQueue is returned by ReadShape for a queue without a stored shape:
// no producer or worker has opened it (or only a version of Overtake that
// recorded no shapes did, see InUse).
var ErrNoQueue = store.ErrNoQueue
