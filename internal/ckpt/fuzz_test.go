package ckpt_test

import (
	"github.com/overtake/overtake/internal/ckpt"

	"bytes"
	"math"
	"testing"
	"unicode/utf8"
)

type fuzzState struct {
	Name  string            `json:"name"`
	Row   int64             `json:"row"`
	Ratio float64           `json:"ratio"`
	Blob  []byte            `json:"blob"`
	Done  map[string]bool   `json:"done"`
	Next  *fuzzState        `json:"next,omitempty"`
	Extra map[string]string `json:"extra,omitempty"`
}

// FuzzJSONRoundTrip checks that what the JSON codec encodes decodes to the
// same value, and that arbitrary bytes never make it panic.
func FuzzJSONRoundTrip(f *testing.F) {
	f.Add("report", int64(42), 0.5, []byte{0, 1, 2}, `{"row":1}`)
	f.Add("", int64(-1), math.Copysign(0, -1), []byte(nil), `not json`)
	f.Add("ünï\u2028", int64(1)<<62, 1e300, []byte("\xff"), `{"next":{"next":{}}}`)
	f.Fuzz(func(t *testing.T, name string, row int64, ratio float64, blob []byte, raw string) {
		if utf8.ValidString(name) && !math.IsNaN(ratio) { // JSON keeps valid UTF-8 only, no NaN
			in := fuzzState{Name: name, Row: row, Ratio: ratio, Blob: blob, Done: map[string]bool{name: true}}
			data, err := ckpt.JSON.Marshal(in)
			if err != nil {
				if math.IsInf(ratio, 0) {
					return
				}
				t.Fatalf("marshal %+v: %v", in, err)
			}
			var out fuzzState
			if err := ckpt.JSON.Unmarshal(data, &out); err != nil {
				t.Fatalf("unmarshal %q: %v", data, err)
			}
			if out.Name != in.Name || out.Row != in.Row || out.Ratio != in.Ratio ||
				!bytes.Equal(out.Blob, in.Blob) || !out.Done[name] {
				t.Fatalf("round trip: got %+v, want %+v", out, in)
			}
		}

		// Arbitrary input: decoding may fail but must not panic, and what
		// decodes re-encodes to something that decodes to the same bytes.
		var v fuzzState
		if ckpt.JSON.Unmarshal([]byte(raw), &v) != nil {
			return
		}
		again, err := ckpt.JSON.Marshal(v)
		if err != nil {
			return // e.g. an infinite float cannot come from JSON, but be lenient
		}
		var w fuzzState
		if err := ckpt.JSON.Unmarshal(again, &w); err != nil {
			t.Fatalf("re-decode %q: %v", again, err)
		}
		third, _ := ckpt.JSON.Marshal(w)
		if !bytes.Equal(again, third) {
			t.Fatalf("not stable: %q then %q", again, third)
		}
	})
}
