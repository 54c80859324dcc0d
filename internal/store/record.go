package store

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// encodeBody returns the part of a task's record that only Go reads: the
// scripts prepend the header "2|<level>|<preemptible>|<enqueued ms>|"
// (see lua/prelude.lua). Layout:
//
//	<max retries>|<timeout ms>|<len>:<type><len>:<class><len>:<headers JSON><payload>
//
// Strings are length-prefixed, so they may hold any byte, and the payload
// is the rest, stored as it is.
func encodeBody(t *Task) (string, error) {
	var hdr []byte
	if len(t.Headers) > 0 {
		b, err := json.Marshal(t.Headers)
		if err != nil {
			return "", fmt.Errorf("%w: headers: %v", ErrInvalidTask, err)
		}
		hdr = b
	}
	var sb strings.Builder
	sb.Grow(32 + len(t.Type) + len(t.Class) + len(hdr) + len(t.Payload))
	sb.WriteString(strconv.Itoa(t.MaxRetries))
	sb.WriteByte('|')
	sb.WriteString(strconv.FormatInt(t.Timeout.Milliseconds(), 10))
	sb.WriteByte('|')
	for _, s := range []string{t.Type, t.Class, string(hdr)} {
		sb.WriteString(strconv.Itoa(len(s)))
		sb.WriteByte(':')
		sb.WriteString(s)
	}
	sb.Write(t.Payload)
	return sb.String(), nil
}

// state is a task's mutable state (the s:<id> key), all strings as the
// scripts write them: one field per key of stateFields (fields.go), which
// says what each holds (TestStateFields).
type state struct {
	St  string `json:"st,omitempty"`
	L   string `json:"l,omitempty"`
	Att string `json:"att,omitempty"`
	Pre string `json:"pre,omitempty"`
	Rec string `json:"rec,omitempty"`
	Cps string `json:"cps,omitempty"`
	Rdy string `json:"rdy,omitempty"`
	Agd string `json:"agd,omitempty"`
	Pat string `json:"pat,omitempty"`
	Err string `json:"err,omitempty"`
	Fin string `json:"fin,omitempty"`
	W   string `json:"w,omitempty"`
	Tk  string `json:"tk,omitempty"`
	Stt string `json:"stt,omitempty"`
	Al  string `json:"al,omitempty"`
	Rs  string `json:"rs,omitempty"`
	Dl  string `json:"dl,omitempty"`
	B   string `json:"b,omitempty"`
	Sl  string `json:"sl,omitempty"`
	Cx  string `json:"cx,omitempty"`
}

// decodeTask builds a Task from its three keys' values (record, state,
// checkpoint; nil when absent). A record that cannot be decoded returns an
// error wrapping ErrMalformedRecord (or ErrSchema for another version)
// together with whatever it could read, so the caller can still
// dead-letter it under its lease.
func decodeTask(id string, rec, st, cp any) (*Task, error) {
	t := &Task{Info: Info{ID: id, State: StatePending}}
	if b, ok := cp.(string); ok {
		t.Checkpoint = []byte(b)
	}
	var s state
	if raw, ok := st.(string); ok && raw != "" {
		if err := parseState(raw, &s); err != nil {
			return t, fmt.Errorf("%w: task %q: state: %v", ErrMalformedRecord, id, err)
		}
	}
	raw, _ := rec.(string)
	err := decodeRecord(t, raw)
	applyState(t, &s)
	if err != nil {
		return t, err
	}
	return t, nil
}

func decodeRecord(t *Task, raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: task %q: no record", ErrMalformedRecord, t.ID)
	}
	// strings.SplitN(raw, "|", 7) without its slice.
	var f [7]string
	cut, tail := 0, raw
	for ; cut < len(f)-1; cut++ {
		i := strings.IndexByte(tail, '|')
		if i < 0 {
			break
		}
		f[cut], tail = tail[:i], tail[i+1:]
	}
	if cut < len(f)-1 {
		return fmt.Errorf("%w: task %q: truncated record", ErrMalformedRecord, t.ID)
	}
	f[cut] = tail
	if f[0] != strconv.Itoa(schemaVersion) {
		return fmt.Errorf("%w: task %q: record of schema %q, this worker reads %d", ErrSchema, t.ID, f[0], schemaVersion)
	}
	var n [5]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return fmt.Errorf("%w: task %q: field %d: %q is not an integer", ErrMalformedRecord, t.ID, i+1, f[i+1])
		}
		n[i] = v
	}
	t.Level, t.OriginalLevel = int(n[0]), int(n[0])
	t.NotPreemptible = n[1] == 0
	t.EnqueuedAt, t.ReadyAt, t.ProcessAt = msTime(n[2]), msTime(n[2]), msTime(n[2])
	t.MaxRetries, t.Timeout = int(n[3]), time.Duration(n[4])*time.Millisecond
	rest := f[6]
	var strs [3]string
	for i := range strs {
		c := strings.IndexByte(rest, ':')
		if c < 0 {
			return fmt.Errorf("%w: task %q: truncated record", ErrMalformedRecord, t.ID)
		}
		l, err := strconv.Atoi(rest[:c])
		if err != nil || l < 0 || c+1+l > len(rest) {
			return fmt.Errorf("%w: task %q: bad string length %q", ErrMalformedRecord, t.ID, rest[:c])
		}
		strs[i], rest = rest[c+1:c+1+l], rest[c+1+l:]
	}
	t.Type, t.Class = strs[0], strs[1]
	t.Payload = []byte(rest)
	if strs[2] != "" {
		if err := json.Unmarshal([]byte(strs[2]), &t.Headers); err != nil {
			return fmt.Errorf("%w: task %q: headers: %v", ErrMalformedRecord, t.ID, err)
		}
	}
	if t.Type == "" {
		return fmt.Errorf("%w: task %q: empty type", ErrMalformedRecord, t.ID)
	}
	return nil
}

// applyState overlays the mutable state on a task decoded from its record.
func applyState(t *Task, s *state) {
	if s.St != "" {
		t.State = State(s.St)
	}
	if s.L != "" {
		if l, err := strconv.Atoi(s.L); err == nil {
			t.Level = l
		}
	}
	if s.Al != "" {
		if l, err := strconv.Atoi(s.Al); err == nil {
			t.Level = l
		}
	}
	t.Attempt, t.Preemptions, t.Recoveries = atoi(s.Att), atoi(s.Pre), atoi(s.Rec)
	t.CheckpointSeq = int64(atoi(s.Cps))
	if s.Rdy != "" {
		t.ReadyAt = msTime(int64(atoi(s.Rdy)))
	}
	if s.Pat != "" {
		t.ProcessAt = msTime(int64(atoi(s.Pat)))
	}
	t.AgedAt = msTime(int64(atoi(s.Agd)))
	t.LastError, t.Worker, t.Token = s.Err, s.W, s.Tk
	t.LeasedAt = msTime(int64(atoi(s.Stt)))
	t.CancelRequestedAt = msTime(int64(atoi(s.Cx)))
	t.LeaseDeadline = msTime(int64(atoi(s.Dl)))
	t.RunSpans = strings.Fields(s.Rs)
}

// atoi is s as an int, 0 when it is not one. An empty s (a field the
// state does not have) is 0 without a parse, whose error would cost an
// allocation.
func atoi(s string) int {
	if s == "" {
		return 0
	}
	n, _ := strconv.Atoi(s)
	return n
}

// msTime is the time of ms milliseconds since the epoch; zero for 0.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
