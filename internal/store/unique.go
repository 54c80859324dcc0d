package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Uniqueness (the Unique option): an equal task (same queue, type and
// payload) is refused with ErrDuplicateTask while another holds the lock
// u:<digest>. The enqueue script takes the lock with the task, atomically
// (SET NX PX, its value the task's ID); it lasts the option's time to live
// from when the task is due, or until the task succeeds: the runtime then
// calls ReleaseUnique. A task that fails, is retried, dead-lettered or
// requeued from the dead set keeps the lock until it expires; deleting a
// dead task (DeleteDead) releases it.

// UniqueHeader is the header in which a unique task carries the digest of
// its type and payload: the worker that acks it releases u:<digest>.
const UniqueHeader = "overtake-unique"

// uniqueReleaseScript is lua/unique_release.lua: it releases a succeeded
// task's lock while the task holds it.
var uniqueReleaseScript = script("unique_release.lua")

// unique is the key of the uniqueness lock of digest d.
func (k keys) unique(d string) string { return k.prefix + "u:" + d }

// Unique refuses the task, with ErrDuplicateTask, while an equal task
// (same type and payload) holds the queue's uniqueness lock for them, and
// else takes the lock for ttl (counted from when the task is due) or until
// the task succeeds, whichever comes first. ttl must be at least 1 ms.
func Unique(ttl time.Duration) Option {
	return func(_ *Store, t *Task) error {
		if ttl < time.Millisecond {
			return fmt.Errorf("%w: Unique ttl %v is under 1ms", ErrInvalidTask, ttl)
		}
		t.unique = ttl
		return nil
	}
}

// uniqueDigest names the lock of tasks of type typ with payload p: the
// first 16 bytes of the SHA-256 of the type's length (8 bytes, big
// endian), the type and the payload, in hex. The length makes the split
// between type and payload part of the digest: type "n\x00" with payload
// "z" and type "n" with payload "\x00z" are different tasks.
func uniqueDigest(typ string, p []byte) string {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(typ)))
	h.Write(n[:])
	h.Write([]byte(typ))
	h.Write(p)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// ReleaseUnique releases the uniqueness lock of t, a task that succeeded,
// if it is unique and still holds it (a lock that expired may be a newer
// equal task's). It does nothing for a task that is not unique.
func (c *Store) ReleaseUnique(ctx context.Context, t *Task) error {
	if s := c.shardOf(t.ID); s != c {
		return s.ReleaseUnique(ctx, t)
	}
	d := t.Headers[UniqueHeader]
	if d == "" {
		return nil
	}
	if err := c.run(ctx, uniqueReleaseScript, []string{c.keys.unique(d)}, t.ID).Err(); err != nil {
		return wrapf(scriptErr(err), "release the uniqueness lock of %s", t.ID)
	}
	return nil
}

// uniqueLockOf returns the key of the uniqueness lock that task id's
// record names in its UniqueHeader, or "" when the task has no record, is
// not unique or its record cannot be read (the lock then lasts its ttl).
// The record is written once, so reading it before the script that
// deletes the task is safe.
func (c *Store) uniqueLockOf(ctx context.Context, id string) (string, error) {
	raw, err := c.rdb.Get(ctx, c.keys.task(id)).Result()
	switch {
	case errors.Is(err, redis.Nil), redis.HasErrorPrefix(err, "WRONGTYPE"):
		return "", nil // none, or not a string: the script says which
	case err != nil:
		return "", err
	}
	t := &Task{Info: Info{ID: id}}
	if decodeRecord(t, raw) != nil || t.Headers[UniqueHeader] == "" {
		return "", nil
	}
	return c.keys.unique(t.Headers[UniqueHeader]), nil
}
