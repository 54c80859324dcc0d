package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// recordOf builds the record the enqueue script stores: its header, then
// encodeBody's part.
func recordOf(t testing.TB, in *Task, enq int64) string {
	body, err := encodeBody(in)
	require.NoError(t, err)
	prb := "1"
	if in.NotPreemptible {
		prb = "0"
	}
	return "2|" + strconv.Itoa(in.Level) + "|" + prb + "|" + strconv.FormatInt(enq, 10) + "|" + body
}

// FuzzDecodeRecord feeds decodeTask arbitrary records and states: it must
// never panic, must report every failure as ErrMalformedRecord or
// ErrSchema, and must always return the task's ID and whatever token it
// read, so the caller can dead-letter the task.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(recordOf(f, &Task{Info: Info{Type: "t", Payload: []byte("p"), Class: "c", Headers: map[string]string{"k": "v"}}}, 7), `{"tk":"tok"}`)
	f.Add("2|1|1|5|25|0|1:t0:0:", `{"st":"active","tk":"x","l":"2"}`)
	f.Add("2|1|1|5|25|0|9:t0:0:", "")
	f.Add("1|1|1|5|25|0|1:t0:0:", "")
	f.Add("2|99999999999999999999|1|5|25|0|1:t0:0:", "{")
	f.Add("", "[]")
	f.Fuzz(func(t *testing.T, rec, st string) {
		var r, s any
		if rec != "" {
			r = rec
		}
		if st != "" {
			s = st
		}
		tk, err := decodeTask("id1", r, s, nil)
		require.NotNil(t, tk)
		require.Equal(t, "id1", tk.ID)
		if err != nil {
			require.True(t, errors.Is(err, ErrMalformedRecord) || errors.Is(err, ErrSchema), "%v", err)
			return
		}
		require.NotEmpty(t, tk.Type)
	})
}

// FuzzRecordRoundTrip checks that every field Enqueue stores decodes back
// to the value it was encoded from.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("email", []byte("payload"), 2, 25, int64(1500*time.Millisecond), true, "paying", "traceparent", "00-ab-cd-01", int64(1_750_000_000_000))
	f.Add("t", []byte{}, 0, 0, int64(0), false, "", "", "", int64(1))
	f.Add("\xff|:", []byte{0, '|', ':', 2}, 1<<20, 5, int64(1<<40), true, "c\x00|3:", "k", "<&>", int64(1))
	f.Fuzz(func(t *testing.T, typ string, payload []byte, level, maxRetries int, timeout int64,
		preemptible bool, class, hk, hv string, now int64) {
		if typ == "" || now <= 0 || level < 0 || maxRetries < 0 || timeout < 0 || !utf8.ValidString(hk) || !utf8.ValidString(hv) {
			t.Skip("not a record Enqueue writes (or a header JSON cannot carry)")
		}
		in := &Task{Info: Info{ID: "id", Type: typ, Payload: payload, Level: level, MaxRetries: maxRetries,
			Timeout: time.Duration(timeout), NotPreemptible: !preemptible, Class: class}}
		if hk != "" {
			in.Headers = map[string]string{hk: hv}
		}
		out, err := decodeTask("id", recordOf(t, in, now), nil, nil)
		require.NoError(t, err)
		require.Equal(t, typ, out.Type)
		require.True(t, bytes.Equal(payload, out.Payload), "payload")
		require.Equal(t, level, out.Level)
		require.Equal(t, level, out.OriginalLevel)
		require.Equal(t, maxRetries, out.MaxRetries)
		require.Equal(t, time.Duration(in.Timeout.Milliseconds())*time.Millisecond, out.Timeout)
		require.Equal(t, !preemptible, out.NotPreemptible)
		require.Equal(t, class, out.Class)
		require.Equal(t, in.Headers, out.Headers)
		require.Equal(t, StatePending, out.State)
		require.Equal(t, now, out.EnqueuedAt.UnixMilli())
		require.Equal(t, now, out.ReadyAt.UnixMilli())
		require.Zero(t, out.Attempt)
		require.Nil(t, out.Checkpoint)
		require.Empty(t, out.Token)
	})
}

// FuzzParseState checks the hand-written state parser against
// encoding/json: the same fields, or an error where encoding/json errs.
func FuzzParseState(f *testing.F) {
	f.Add(`{"st":"active","l":"1","al":"1","w":"host-1-ab","tk":"0a1b.3","stt":"1750000000000"}`)
	f.Add(`{"err":"boom: \"quoted\"","att":"2"}`)
	f.Add(`{"st":"dead","x":"y"}`)
	f.Add(`{"st":1}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var got, want state
		gerr := parseState(raw, &got)
		werr := json.Unmarshal([]byte(raw), &want)
		if werr != nil {
			return // the fast path may accept less strict input only when it is a flat string object
		}
		require.NoError(t, gerr, "%q", raw)
		require.Equal(t, want, got, "%q", raw)
	})
}
