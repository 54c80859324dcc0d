package runtime

import (
	"sync"
	"time"
)

// unsavedLogEvery bounds the warning about preempted runs that saved no
// checkpoint: at most one line per task type in this interval, the next
// one saying how many were not logged in between.
const unsavedLogEvery = time.Minute

// unsavedLog rate-limits, per task type, the warning of a preempted run
// that returned with no checkpoint saved (completer.unsavedPreemption).
// The zero value logs at most once per unsavedLogEvery.
type unsavedLog struct {
	mu    sync.Mutex
	every time.Duration // 0: unsavedLogEvery
	types map[string]*unsavedType
}

// unsavedType is the limiter's state of one task type.
type unsavedType struct {
	last    time.Time // when its last line was logged
	skipped int       // runs not logged since
}

// allow says whether a preempted run of type typ that saved nothing may
// be logged at now; if so, skipped is how many of that type were not
// logged since the last line, and the count starts again.
func (u *unsavedLog) allow(typ string, now time.Time) (ok bool, skipped int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	every := u.every
	if every == 0 {
		every = unsavedLogEvery
	}
	if u.types == nil {
		u.types = make(map[string]*unsavedType)
	}
	s, seen := u.types[typ]
	if !seen {
		s = &unsavedType{}
		u.types[typ] = s
	}
	if seen && now.Sub(s.last) < every {
		s.skipped++
		return false, 0
	}
	skipped, s.skipped, s.last = s.skipped, 0, now
	return true, skipped
}
