package runtime

import (
	"testing"
	"time"
)

// Each wait lies between half and all of a bound that doubles from 10 ms
// up to the limit, and starts over after reset.
func TestBackoff(t *testing.T) {
	b := backoff{limit: 50 * time.Millisecond}
	bounds := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
		50 * time.Millisecond, 50 * time.Millisecond}
	for i, bound := range bounds {
		if w := b.next(); w < bound/2 || w > bound {
			t.Fatalf("wait %d: %v, want between %v and %v", i, w, bound/2, bound)
		}
	}
	b.reset()
	if w := b.next(); w < 5*time.Millisecond || w > 10*time.Millisecond {
		t.Fatalf("after reset: %v, want between 5ms and 10ms", w)
	}
}

// The waits are jittered: a hundred workers that failed together do not
// all retry at the same instant.
func TestBackoffJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 100 {
		b := backoff{limit: 2 * time.Second}
		for range 20 {
			b.next()
		}
		seen[b.next()] = true
	}
	if len(seen) < 50 {
		t.Fatalf("%d distinct waits at the limit out of 100, want them spread", len(seen))
	}
}

// In an outage's first fastProbe the dispatcher's waits stay under
// fastCap (a restart or a failover of a few seconds is noticed within
// about that); after it they are drawn at the limit: with the default
// 2 s, at least a second apart.
func TestBackoffOutagePhases(t *testing.T) {
	b := backoff{limit: 2 * time.Second}
	for i := range 40 {
		if w := b.nextIn(time.Duration(i) * 60 * time.Millisecond); w > fastCap || w <= 0 {
			t.Fatalf("wait %d in the first %v: %v, want at most %v", i, fastProbe, w, fastCap)
		}
	}
	for range 20 {
		if w := b.nextIn(fastProbe); w < time.Second || w > 2*time.Second {
			t.Fatalf("wait after %v: %v, want between 1s and 2s", fastProbe, w)
		}
	}
	small := backoff{limit: 30 * time.Millisecond}
	if w := small.nextIn(0); w > 30*time.Millisecond {
		t.Fatalf("a limit under fastCap: %v", w)
	}
	for range 5 {
		if w := small.nextIn(0); w > 30*time.Millisecond {
			t.Fatalf("a limit under fastCap: %v", w)
		}
	}
}
