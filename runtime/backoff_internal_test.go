package runtime

import (
	"testing"
	"time"
)

// The wait doubles from 10 ms up to the limit and starts over after reset.
func TestBackoff(t *testing.T) {
	b := backoff{limit: 50 * time.Millisecond}
	var got []time.Duration
	for range 5 {
		got = append(got, b.next())
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	b.reset()
	if w := b.next(); w != 10*time.Millisecond {
		t.Fatalf("after reset: %v, want 10ms", w)
	}
}
