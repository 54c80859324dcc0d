package runtime

import "time"

// backoff is the wait between tries while Redis is unreachable: 10 ms,
// doubling up to limit (Config.MaxRedisBackoff). The dispatcher and the
// retries of a task's last transition share it.
type backoff struct {
	wait, limit time.Duration
}

// next returns the wait before the next try.
func (b *backoff) next() time.Duration {
	b.wait = min(max(2*b.wait, 10*time.Millisecond), b.limit)
	return b.wait
}

// reset starts over after a success.
func (b *backoff) reset() { b.wait = 0 }
