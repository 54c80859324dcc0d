package queue

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Field names of the task record HASH. Short, because they are stored once
// per task.
const (
	fID          = "id"
	fType        = "type"
	fPayload     = "payload"
	fLevel       = "lvl"
	fOrigLevel   = "olvl" // the level before the first aging (see age in lua.go)
	fAgedAt      = "agd"  // when the task last aged into its level
	fState       = "state"
	fAttempt     = "att"
	fMaxRetries  = "maxr"
	fTimeout     = "tmo"
	fPreemptions = "pre"
	fPreemptible = "prb"
	fClass       = "cls"
	fHeaders     = "hdr"
	fEnqueuedAt  = "enq"
	fReadyAt     = "rdy"
	fProcessAt   = "pat"
	fCheckpoint  = "cp"
	fCheckpoints = "cps"
	fError       = "err"
	fWorker      = "wkr"
	fToken       = "tok"
	fDeadline    = "ldl"
	fRecoveries  = "rec"
	fRunSpans    = "rsp"
)

// encodeFields returns the field/value pairs stored at enqueue.
func encodeFields(t *Task, state State, now time.Time) ([]any, error) {
	prb := "1"
	if !t.Preemptible {
		prb = "0"
	}
	f := []any{
		fID, t.ID, fType, t.Type, fPayload, t.Payload, fLevel, t.Level,
		fState, string(state), fAttempt, 0, fMaxRetries, t.MaxRetries,
		fTimeout, t.Timeout.Milliseconds(), fPreemptions, 0, fPreemptible, prb,
		fEnqueuedAt, now.UnixMilli(), fReadyAt, now.UnixMilli(),
	}
	if t.Class != "" {
		f = append(f, fClass, t.Class)
	}
	if !t.ProcessAt.IsZero() {
		f = append(f, fProcessAt, t.ProcessAt.UnixMilli())
	}
	if len(t.Headers) > 0 {
		b, err := json.Marshal(t.Headers)
		if err != nil {
			return nil, fmt.Errorf("%w: headers: %v", ErrInvalidTask, err)
		}
		f = append(f, fHeaders, string(b))
	}
	return f, nil
}

// decodeRecord turns the flat field/value list of HGETALL into a Task.
// A record that cannot be decoded returns an error wrapping
// ErrMalformedRecord together with whatever ID and token it could read, so
// the caller can still dead-letter it under its lease.
func decodeRecord(flat []any) (*Task, error) {
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		m[k] = v
	}
	return decodeMap(m)
}

func decodeMap(m map[string]string) (*Task, error) {
	t := &Task{ID: m[fID], Token: m[fToken], Worker: m[fWorker], Type: m[fType], Class: m[fClass],
		State: State(m[fState]), LastError: m[fError], Preemptible: m[fPreemptible] != "0"}
	if p, ok := m[fPayload]; ok {
		t.Payload = []byte(p)
	}
	if cp, ok := m[fCheckpoint]; ok {
		t.Checkpoint = []byte(cp)
	}
	d := decoder{m: m}
	t.Level = int(d.int(fLevel, true))
	t.OriginalLevel = t.Level
	if _, ok := m[fOrigLevel]; ok {
		t.OriginalLevel = int(d.int(fOrigLevel, false))
	}
	t.AgedAt = d.time(fAgedAt)
	t.Attempt = int(d.int(fAttempt, false))
	t.MaxRetries = int(d.int(fMaxRetries, false))
	t.Timeout = time.Duration(d.int(fTimeout, false)) * time.Millisecond
	t.Preemptions = int(d.int(fPreemptions, false))
	t.Recoveries = int(d.int(fRecoveries, false))
	t.CheckpointSeq = d.int(fCheckpoints, false)
	t.EnqueuedAt = d.time(fEnqueuedAt)
	t.ReadyAt = d.time(fReadyAt)
	t.ProcessAt = d.time(fProcessAt)
	t.LeaseDeadline = d.time(fDeadline)
	t.RunSpans = strings.Fields(m[fRunSpans])
	if h := m[fHeaders]; h != "" {
		if err := json.Unmarshal([]byte(h), &t.Headers); err != nil && d.err == nil {
			d.err = fmt.Errorf("field %s: %v", fHeaders, err)
		}
	}
	if d.err == nil && t.Type == "" {
		d.err = fmt.Errorf("field %s is empty", fType)
	}
	if d.err != nil {
		return t, fmt.Errorf("%w: task %q: %v", ErrMalformedRecord, t.ID, d.err)
	}
	return t, nil
}

// decoder reads numeric fields and keeps the first error.
type decoder struct {
	m   map[string]string
	err error
}

func (d *decoder) int(field string, required bool) int64 {
	s, ok := d.m[field]
	if !ok || s == "" {
		if required && d.err == nil {
			d.err = fmt.Errorf("field %s is missing", field)
		}
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("field %s: %q is not an integer", field, s)
	}
	return n
}

func (d *decoder) time(field string) time.Time {
	ms := d.int(field, false)
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
