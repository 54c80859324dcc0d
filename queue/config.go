package queue

import (
	"fmt"
	"math/rand/v2"
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
	// high when Levels is 3, else the level numbers.
	LevelNames []string
	// Classes maps logical priority classes ("paying", "free") to levels,
	// used by the Class option. Defaults to none.
	Classes map[string]int
	// MaxPayloadBytes is the largest payload Enqueue accepts. Defaults to
	// 1 MiB; a negative value means no limit.
	MaxPayloadBytes int
	// MaxCheckpointBytes is the largest checkpoint a handler may save
	// (checkpoint.Save); a larger one fails with ErrCheckpointTooLarge.
	// Defaults to 1 MiB; a negative value means no limit.
	MaxCheckpointBytes int
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
	// returns time.Now, used only to turn absolute times of the API
	// (ProcessAt, a retry's time) into delays and for display.
	Clock func() time.Time
	// TracerProvider makes the producer span "enqueue <queue>" of every
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
	// WaitReplicas, when positive, makes every call that writes the queue
	// (Enqueue and its grouped calls, EnqueueBatch, leases, heartbeats,
	// checkpoints, acks and the other transitions) send `WAIT WaitReplicas
	// WaitTimeout` right after its script on the same connection, and fail
	// with ErrNotReplicated when fewer replicas confirmed the write. The
	// write was applied on the primary either way. This narrows, but does
	// not close, the window in which a failover loses acknowledged writes:
	// see docs/failover.md. Defaults to zero: no WAIT.
	WaitReplicas int
	// WaitTimeout bounds each WAIT when WaitReplicas is set. Keep it below
	// the Redis client's ReadTimeout. Defaults to 1 s.
	WaitTimeout time.Duration
}

// Default values of Config.
const (
	defaultNamespace       = "overtake"
	defaultName            = "default"
	defaultLevels          = 3
	defaultMaxPayloadBytes = 1 << 20
	defaultLeaseDuration   = 30 * time.Second
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
	if c.LeaseDuration == 0 {
		c.LeaseDuration = defaultLeaseDuration
	}
	if c.Backoff == nil {
		c.Backoff = defaultBackoff
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
	if c.Propagator == nil {
		c.Propagator = telemetry.DefaultPropagator()
	}
	if c.WaitReplicas > 0 && c.WaitTimeout == 0 {
		c.WaitTimeout = defaultWaitTimeout
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Levels < 1 || c.Levels > 64:
		return fmt.Errorf("overtake: config: Levels must be 1..64, got %d", c.Levels)
	case len(c.LevelNames) != c.Levels:
		return fmt.Errorf("overtake: config: %d LevelNames for %d levels", len(c.LevelNames), c.Levels)
	case c.LeaseDuration < 100*time.Millisecond:
		return fmt.Errorf("overtake: config: LeaseDuration %v is under 100ms", c.LeaseDuration)
	case c.Retention < 0:
		return fmt.Errorf("overtake: config: negative Retention %v", c.Retention)
	case c.AgeAfter < 0 || (c.AgeAfter > 0 && c.AgeAfter < time.Millisecond):
		return fmt.Errorf("overtake: config: AgeAfter %v must be 0 (off) or at least 1ms", c.AgeAfter)
	case c.WaitReplicas < 0:
		return fmt.Errorf("overtake: config: negative WaitReplicas %d", c.WaitReplicas)
	case c.WaitReplicas > 0 && c.WaitTimeout < time.Millisecond:
		return fmt.Errorf("overtake: config: WaitTimeout %v must be at least 1ms", c.WaitTimeout)
	}
	seen := map[string]bool{}
	for i, n := range c.LevelNames {
		switch {
		case n == "":
			return fmt.Errorf("overtake: config: level %d has an empty name", i)
		case seen[n]:
			return fmt.Errorf("overtake: config: level name %q given twice", n)
		}
		seen[n] = true
	}
	for name, lvl := range c.Classes {
		if name == "" {
			return fmt.Errorf("overtake: config: a class has an empty name")
		}
		if lvl < 0 || lvl >= c.Levels {
			return fmt.Errorf("overtake: config: class %q maps to level %d, outside 0..%d", name, lvl, c.Levels-1)
		}
	}
	return nil
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
func (c *Client) LevelName(l int) string {
	if l >= 0 && l < len(c.cfg.LevelNames) {
		return c.cfg.LevelNames[l]
	}
	return strconv.Itoa(l)
}

// LevelByName returns the level called name (a level name or a number).
func (c *Client) LevelByName(name string) (int, error) {
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
