package runtime

import (
	"math/rand/v2"
	"time"
)

// backoff is the wait between tries while Redis is unreachable: it
// doubles from 10 ms up to limit (Config.MaxRedisBackoff), and each wait
// is drawn between half of that and all of it (jitter), so that the
// workers of a fleet that lost Redis together do not come back in step.
// Only a success resets it (reset). The dispatcher, the wake-up
// subscription and the retries of a task's last transition use it.
type backoff struct {
	wait, limit time.Duration
}

// Most outages are short: a restart, a Sentinel failover (promoted after
// its down-after time), a network blip. For the first fastProbe of one the
// dispatcher's waits stay under fastCap, so that it notices Redis back
// within about that; from then on they are drawn at the limit, which by
// default (2 s, so 1–2 s) keeps a worker under one attempt a second
// against a Redis that is restarting (nextIn).
const (
	fastProbe = 2500 * time.Millisecond
	fastCap   = 100 * time.Millisecond
)

// nextIn returns the dispatcher's wait before its next probe in an outage
// that began elapsed ago: doubling from 10 ms up to fastCap for the first
// fastProbe, then at the limit.
func (b *backoff) nextIn(elapsed time.Duration) time.Duration {
	if elapsed >= fastProbe {
		b.wait = b.limit
		return b.wait/2 + rand.N(b.wait-b.wait/2+1)
	}
	b.wait = min(max(2*b.wait, 10*time.Millisecond), b.limit, fastCap)
	return b.wait/2 + rand.N(b.wait-b.wait/2+1)
}

// next returns the wait before the next try.
func (b *backoff) next() time.Duration {
	b.wait = min(max(2*b.wait, 10*time.Millisecond), b.limit)
	return b.wait/2 + rand.N(b.wait-b.wait/2+1)
}

// reset starts over after a success.
func (b *backoff) reset() { b.wait = 0 }
