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

// next returns the wait before the next try.
func (b *backoff) next() time.Duration {
	b.wait = min(max(2*b.wait, 10*time.Millisecond), b.limit)
	return b.wait/2 + rand.N(b.wait-b.wait/2+1)
}

// reset starts over after a success.
func (b *backoff) reset() { b.wait = 0 }
