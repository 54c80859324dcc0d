package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/overtake/overtake/internal/telemetry"
)

// Config configures a Client. The zero value is usable: WithDefaults fills
// every unset field with the default documented on it.
type Config struct {
	// Namespace prefixes every key. Defaults to "overtake".
	Namespace string
	// Name is the queue's name. Defaults to "default".
	Name string
	// Levels is the number of priority levels, 0..Levels-1, higher is more
	// urgent. Defaults to 3.
	Levels int
	// LevelNames names each level, lowest first. Defaults to low, normal,
	// high when Levels is 3, else the level numbers. A name that reads as a
	// number (strconv.Atoi) must be its own level's number: levels are
	// given by name or number alike (LevelByName, LevelNamed).
	LevelNames []string
	// Classes maps logical priority classes ("paying", "free") to levels,
	// used by the Class option. Defaults to none. A process may set fewer
	// classes than others of its queue, or none; a class set by two must
	// map to one level (CheckShape).
	Classes map[string]int
	// MaxPayloadBytes is the largest payload Enqueue accepts. Defaults to
	// 1 MiB; a negative value means no limit.
	MaxPayloadBytes int
	// MaxCheckpointBytes is the largest checkpoint a handler may save
	// (checkpoint.Save); a larger one fails with ErrCheckpointTooLarge.
	// Defaults to 1 MiB; a negative value means no limit.
	MaxCheckpointBytes int
	// MaxResultBytes is the largest result a handler may store
	// (handlers.SetResult); a larger one fails with ErrResultTooLarge and
	// changes nothing. Defaults to 1 MiB; a negative value means no limit.
	MaxResultBytes int
	// ResultRetention is how long a task's result is kept after the
	// handler stored it (handlers.SetResult), in a key of its own that
	// outlives the task's record: the worker that stores it applies its
	// own ResultRetention. Defaults to 24 h (when zero); it must be at
	// least 1ms (Redis keeps a key for whole milliseconds).
	ResultRetention time.Duration
	// WaitReplicas, when positive, makes every write call (an Enqueue or
	// a grouped one, a lease with its acks, an ack, retry, requeue, dead
	// letter, heartbeat, checkpoint save, pause, dead-letter admin) send
	// WAIT WaitReplicas WaitTimeout on its connection, and fail with
	// ErrNotReplicated when fewer replicas confirm. The change is applied
	// on the primary either way; WAIT narrows the window in which a
	// failover loses an acknowledged write, it does not close it (Redis
	// replication stays asynchronous: a failover may still promote a
	// replica that missed it). docs/failover.md has what it costs. Zero,
	// the default, sends no WAIT.
	WaitReplicas int
	// WaitTimeout bounds each WAIT. Defaults to 1 s.
	WaitTimeout time.Duration
	// Retention is how long a completed task's record is kept. Defaults to
	// zero: the record is deleted at once.
	Retention time.Duration
	// LeaseDuration is how long a lease lasts without a heartbeat.
	// Defaults to 30 s.
	LeaseDuration time.Duration
	// AgeAfter turns on aging, so low priority never starves under a
	// stream of urgent work: a pending task that waited AgeAfter at a level
	// below the top moves to the tail of the next level up, and again after
	// another AgeAfter, up to the top level. Task.OriginalLevel keeps the
	// level it was enqueued at; it keeps the level it reached when it runs,
	// is retried or is requeued. Aging happens in every lease and heartbeat
	// call (at most about 20 moves each), at millisecond resolution.
	// Defaults to zero: off.
	AgeAfter time.Duration
	// Backoff returns the delay before retry number attempt (1-based).
	// Defaults to exponential backoff with full jitter, 1 s base, 1 h cap.
	Backoff func(attempt int) time.Duration
	// Clock, when set, replaces Redis's clock in every script (lease
	// deadlines, liveness, schedules, retries, aging): tests inject a fake
	// one. Left nil, the default, every script reads Redis's TIME, so a
	// worker whose clock is off changes nothing; Config().Clock then
	// returns the host's clock (time.Now), used only to turn absolute
	// times of the API (ProcessAt, a retry's time) into delays and for
	// display. New knows that clock from an injected one, so a config read
	// back with Config (or filled by WithDefaults) and passed to New keeps
	// Redis's clock.
	Clock func() time.Time
	// TracerProvider makes the producer span "enqueue <queue>/<type>" of every
	// Enqueue. Defaults to the otel global (otel.GetTracerProvider), a no-op
	// until the application installs one (otlp.WithGlobal).
	TracerProvider trace.TracerProvider
	// Propagator writes the producer's trace context into Task.Headers at
	// enqueue and reads it back for the worker's process span. Defaults to
	// W3C TraceContext plus Baggage, not the
	// otel global, whose default propagates nothing: producers and workers
	// must agree on it, and a trace must not break because one process
	// left the global unset.
	Propagator propagation.TextMapPropagator
}

// ErrInvalidConfig is returned by New for a Config it cannot use; the
// message says which field is wrong.
var ErrInvalidConfig = errors.New("overtake: invalid config")

// Default values of Config.
const (
	defaultNamespace       = "overtake"
	defaultName            = "default"
	defaultLevels          = 3
	defaultMaxPayloadBytes = 1 << 20
	defaultLeaseDuration   = 30 * time.Second
	defaultResultRetention = 24 * time.Hour
)

// WithDefaults returns a copy of c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = defaultNamespace
	}
	if c.Name == "" {
		c.Name = defaultName
	}
	if c.Levels == 0 {
		c.Levels = defaultLevels
	}
	if c.LevelNames == nil {
		if c.Levels == 3 {
			c.LevelNames = []string{"low", "normal", "high"}
		} else {
			for i := 0; i < c.Levels; i++ {
				c.LevelNames = append(c.LevelNames, strconv.Itoa(i))
			}
		}
	}
	if c.MaxPayloadBytes == 0 {
		c.MaxPayloadBytes = defaultMaxPayloadBytes
	}
	if c.MaxCheckpointBytes == 0 {
		c.MaxCheckpointBytes = defaultMaxPayloadBytes
	}
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = defaultMaxPayloadBytes
	}
	if c.ResultRetention == 0 {
		c.ResultRetention = defaultResultRetention
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = defaultLeaseDuration
	}
	if c.Backoff == nil {
		c.Backoff = defaultBackoff
	}
	if c.Clock == nil {
		c.Clock = hostClock
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
	if c.Propagator == nil {
		c.Propagator = telemetry.DefaultPropagator()
	}
	return c
}

// maxLevels is the most levels a queue may have.
const maxLevels = 64

func (c Config) validate() error {
	switch {
	case c.Levels < 1 || c.Levels > maxLevels:
		return fmt.Errorf("%w: Levels must be 1..%d, got %d", ErrInvalidConfig, maxLevels, c.Levels)
	case len(c.LevelNames) != c.Levels:
		return fmt.Errorf("%w: %d LevelNames for %d levels", ErrInvalidConfig, len(c.LevelNames), c.Levels)
	case c.LeaseDuration < 100*time.Millisecond:
		return fmt.Errorf("%w: LeaseDuration %v is under 100ms", ErrInvalidConfig, c.LeaseDuration)
	case c.Retention < 0:
		return fmt.Errorf("%w: negative Retention %v", ErrInvalidConfig, c.Retention)
	case c.ResultRetention < 0:
		return fmt.Errorf("%w: negative ResultRetention %v", ErrInvalidConfig, c.ResultRetention)
	case c.ResultRetention < time.Millisecond:
		// Redis keeps a result for whole milliseconds (PX): under 1ms
		// would be PX 0, which Redis refuses at every SetResult.
		return fmt.Errorf("%w: ResultRetention %v is under 1ms", ErrInvalidConfig, c.ResultRetention)
	case c.WaitReplicas < 0 || c.WaitTimeout < 0:
		return fmt.Errorf("%w: negative WaitReplicas %d or WaitTimeout %v", ErrInvalidConfig, c.WaitReplicas, c.WaitTimeout)
	case c.AgeAfter < 0 || (c.AgeAfter > 0 && c.AgeAfter < time.Millisecond):
		return fmt.Errorf("%w: AgeAfter %v must be 0 (off) or at least 1ms", ErrInvalidConfig, c.AgeAfter)
	}
	seen := map[string]bool{}
	for i, n := range c.LevelNames {
		switch {
		case n == "":
			return fmt.Errorf("%w: level %d has an empty name", ErrInvalidConfig, i)
		case seen[n]:
			return fmt.Errorf("%w: level name %q given twice", ErrInvalidConfig, n)
		}
		if l, err := strconv.Atoi(n); err == nil && l != i {
			return fmt.Errorf("%w: level name %q of level %d reads as level %d (a level is given "+
				"by name or number): a number may name only its own level", ErrInvalidConfig, n, i, l)
		}
		seen[n] = true
	}
	for name, lvl := range c.Classes {
		if name == "" {
			return fmt.Errorf("%w: a class has an empty name", ErrInvalidConfig)
		}
		if lvl < 0 || lvl >= c.Levels {
			return fmt.Errorf("%w: class %q maps to level %d, outside 0..%d", ErrInvalidConfig, name, lvl, c.Levels-1)
		}
	}
	return nil
}

// hostClock is the Clock WithDefaults fills in when none was injected:
// time.Now, under a name of its own so that serverTime can tell it from an
// injected clock (even an injected time.Now).
func hostClock() time.Time { return time.Now() }

// serverTime reports whether a client of c runs its scripts on Redis's
// clock: no Clock was injected, or the one WithDefaults fills in. Funcs
// cannot be compared in Go; their code pointers can, and no function but
// hostClock has hostClock's code.
func (c Config) serverTime() bool {
	return c.Clock == nil || reflect.ValueOf(c.Clock).Pointer() == reflect.ValueOf(hostClock).Pointer()
}

// defaultBackoff is exponential backoff with full jitter: a random delay in
// [base/2, base] where base doubles from 1 s per attempt, capped at 1 h.
func defaultBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	base := time.Second << min(attempt-1, 12)
	if base > time.Hour {
		base = time.Hour
	}
	return base/2 + rand.N(base/2+1)
}

// LevelName returns the name of level l, or its number when out of range.
func (c *Store) LevelName(l int) string {
	if l >= 0 && l < len(c.cfg.LevelNames) {
		return c.cfg.LevelNames[l]
	}
	return strconv.Itoa(l)
}

// LevelByName returns the level called name (a level name or a number).
func (c *Store) LevelByName(name string) (int, error) {
	for i, n := range c.cfg.LevelNames {
		if n == name {
			return i, nil
		}
	}
	if l, err := strconv.Atoi(name); err == nil && l >= 0 && l < c.cfg.Levels {
		return l, nil
	}
	return 0, fmt.Errorf("%w: no level named %q (have %v)", ErrInvalidLevel, name, c.cfg.LevelNames)
}
