package queue

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// flatten turns encodeFields' pairs into what HGETALL returns: strings,
// formatted as go-redis writes the arguments.
func flatten(t testing.TB, pairs []any) []any {
	out := make([]any, len(pairs))
	for i, v := range pairs {
		switch x := v.(type) {
		case string:
			out[i] = x
		case []byte:
			out[i] = string(x)
		case int:
			out[i] = strconv.Itoa(x)
		case int64:
			out[i] = strconv.FormatInt(x, 10)
		default:
			t.Fatalf("encodeFields produced a %T", v)
		}
	}
	return out
}

// FuzzDecodeRecord feeds decodeRecord arbitrary field lists: it must never
// panic, must report every failure as ErrMalformedRecord, and must always
// return the ID and token it read, so the caller can dead-letter the task.
func FuzzDecodeRecord(f *testing.F) {
	pairs, err := encodeFields(&Task{ID: "id1", Type: "t", Payload: []byte("p"), Class: "c",
		Headers: map[string]string{"k": "v"}, ProcessAt: time.UnixMilli(5)}, StatePending, time.UnixMilli(7))
	require.NoError(f, err)
	var seed []string
	for _, v := range flatten(f, pairs) {
		seed = append(seed, v.(string))
	}
	f.Add(strings.Join(seed, "\x00"))
	f.Add(strings.Join(append(seed, fToken, "tok", fLevel, "x"), "\x00"))
	f.Add("id\x00a\x00type\x00t\x00lvl\x0099999999999999999999\x00hdr\x00null")
	f.Add("id\x00a\x00type\x00t\x00lvl\x001\x00hdr\x00[1]\x00att\x00-3\x00enq\x00-9223372036854775808")
	f.Add("")
	f.Add("\x00\x00\x00")
	f.Fuzz(func(t *testing.T, s string) {
		var flat []any
		m := map[string]string{}
		parts := strings.Split(s, "\x00")
		for i, p := range parts {
			flat = append(flat, p)
			if i%2 == 1 {
				m[parts[i-1]] = p
			}
		}
		if len(parts)%2 == 1 && len(parts) > 1 {
			flat = append(flat, 42) // a value that is not a string
			m[parts[len(parts)-1]] = ""
		}
		tk, err := decodeRecord(flat)
		require.NotNil(t, tk)
		require.Equal(t, m[fID], tk.ID)
		require.Equal(t, m[fToken], tk.Token)
		if err != nil {
			require.True(t, errors.Is(err, ErrMalformedRecord), "%v", err)
			return
		}
		require.NotEmpty(t, tk.Type)
		_, err = strconv.Atoi(m[fLevel])
		require.NoError(t, err, "a record without a numeric level decodes only with an error")
	})
}

// FuzzRecordRoundTrip checks that every field Enqueue stores decodes back
// to the value it was encoded from.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("id", "email", []byte("payload"), 2, 25, int64(1500*time.Millisecond), true, "paying", "traceparent", "00-ab-cd-01", int64(1_750_000_000_000), int64(1_750_000_001_000))
	f.Add("", "t", []byte{}, -1, 0, int64(-1), false, "", "", "", int64(0), int64(1))
	f.Add("é\x00", "\xff", []byte{0, 1, 2}, 1<<40, -5, int64(1<<62), true, "c\x00", "k", "<&>", int64(-1), int64(-1))
	f.Fuzz(func(t *testing.T, id, typ string, payload []byte, level, maxRetries int, timeout int64,
		preemptible bool, class, hk, hv string, processAt, now int64) {
		if typ == "" || now == 0 || !utf8.ValidString(hk) || !utf8.ValidString(hv) {
			t.Skip("not a record Enqueue writes (or a header JSON cannot carry)")
		}
		in := &Task{ID: id, Type: typ, Payload: payload, Level: level, MaxRetries: maxRetries,
			Timeout: time.Duration(timeout), Preemptible: preemptible, Class: class}
		if hk != "" {
			in.Headers = map[string]string{hk: hv}
		}
		if processAt != 0 {
			in.ProcessAt = time.UnixMilli(processAt)
		}
		pairs, err := encodeFields(in, StateScheduled, time.UnixMilli(now))
		require.NoError(t, err)
		require.Zero(t, len(pairs)%2)
		out, err := decodeRecord(flatten(t, pairs))
		require.NoError(t, err)

		require.Equal(t, id, out.ID)
		require.Equal(t, typ, out.Type)
		require.True(t, bytes.Equal(payload, out.Payload), "payload")
		require.Equal(t, level, out.Level)
		require.Equal(t, maxRetries, out.MaxRetries)
		require.Equal(t, time.Duration(in.Timeout.Milliseconds())*time.Millisecond, out.Timeout)
		require.Equal(t, preemptible, out.Preemptible)
		require.Equal(t, class, out.Class)
		require.Equal(t, in.Headers, out.Headers)
		require.Equal(t, StateScheduled, out.State)
		require.Equal(t, now, out.EnqueuedAt.UnixMilli())
		require.Equal(t, now, out.ReadyAt.UnixMilli())
		if processAt != 0 {
			require.Equal(t, processAt, out.ProcessAt.UnixMilli())
		} else {
			require.True(t, out.ProcessAt.IsZero())
		}
		require.Zero(t, out.Attempt)
		require.Zero(t, out.Preemptions)
		require.Nil(t, out.Checkpoint)
		require.Empty(t, out.Token)
	})
}
