package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// resultScript is lua/result.lua: it stores a task's result under a valid
// lease, in res:<id> with its own expiry.
var resultScript = script("result.lua")

// SaveResult stores data as the result of t, a task leased under token,
// in one round trip, fenced by the lease: a worker that lost its lease
// gets ErrLeaseLost and stores nothing. The result lives in a key of its
// own for Config.ResultRetention from this write, so it outlives the
// task's record, which is deleted at the ack; a later write (by this run
// or a later attempt after a retry) replaces it. Data larger than
// Config.MaxResultBytes fails with ErrResultTooLarge and changes nothing.
// Inspect returns the result with the task, and after the task completed.
func (c *Store) SaveResult(ctx context.Context, t *Info, token string, data []byte) error {
	if s := c.shardOf(t.ID); s != c {
		return s.SaveResult(ctx, t, token, data)
	}
	if limit := c.cfg.MaxResultBytes; limit >= 0 && len(data) > limit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, len(data), limit)
	}
	var b strings.Builder
	b.Grow(40 + len(t.Type) + len(data))
	b.WriteString(strconv.FormatInt(t.EnqueuedAt.UnixMilli(), 10))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(t.Level))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(len(t.Type)))
	b.WriteByte(':')
	b.WriteString(t.Type)
	b.Write(data)
	err := c.run(ctx, resultScript, []string{c.keys.state(t.ID), c.keys.result(t.ID)},
		token, b.String(), c.cfg.ResultRetention.Milliseconds(), c.scriptNow()).Err()
	if err = scriptErr(err); err != nil {
		return wrapf(err, "result") // the caller knows the task
	}
	return nil
}

// storedResult is a decoded res:<id>: "<written ms>|<expires ms>|<enqueued
// ms>|<level>|<len>:<type>" then the result bytes (lua/result.lua).
type storedResult struct {
	at, expires, enqueued time.Time
	level                 int
	typ                   string
	data                  []byte
}

// decodeResult parses a res:<id> value; false when it is not one.
func decodeResult(raw string) (storedResult, bool) {
	var r storedResult
	f := strings.SplitN(raw, "|", 5)
	if len(f) < 5 {
		return r, false
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return r, false
		}
		n[i] = v
	}
	c := strings.IndexByte(f[4], ':')
	if c < 0 {
		return r, false
	}
	l, err := strconv.Atoi(f[4][:c])
	if err != nil || l < 0 || c+1+l > len(f[4]) {
		return r, false
	}
	r.at, r.expires, r.enqueued, r.level = msTime(n[0]), msTime(n[1]), msTime(n[2]), int(n[3])
	r.typ, r.data = f[4][c+1:c+1+l], []byte(f[4][c+1+l:])
	return r, true
}

// attachResult sets t's result fields from res:<id>'s value v (nil when
// absent), when it was stored by this task: a result left by an earlier
// task with the same ID (enqueued at another time) is not t's.
func attachResult(t *Task, v any) {
	raw, ok := v.(string)
	if !ok {
		return
	}
	r, ok := decodeResult(raw)
	if !ok || !r.enqueued.Equal(t.EnqueuedAt) {
		return
	}
	t.Result, t.ResultAt, t.ResultExpiresAt = r.data, r.at, r.expires
}

// resultOnly is the task a result stands for once the task's record is
// gone: the task completed (its record deleted at the ack, or after
// Config.Retention) and its result is retained. It is done, with what the
// result recorded of it: type, level, enqueue time.
func resultOnly(id string, v any) (*Task, bool) {
	raw, ok := v.(string)
	if !ok {
		return nil, false
	}
	r, ok := decodeResult(raw)
	if !ok {
		return nil, false
	}
	return &Task{Info: Info{ID: id, Type: r.typ, Level: r.level, OriginalLevel: r.level, State: StateDone,
		EnqueuedAt: r.enqueued, ReadyAt: r.enqueued, Result: r.data, ResultAt: r.at, ResultExpiresAt: r.expires,
		ResultOnly: true}}, true
}
