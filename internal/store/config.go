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

// Config configures a Store. It has the fields of queue.Config, which
// documents each and converts to it: configFields is the struct both
// spell (a change to one that the other lacks fails to compile in package
// queue), and the one Of's Source names.
type Config configFields

// configFields is the struct of Config and of queue.Config, field for
// field; queue.Config has each field's documentation and default.
type configFields = struct {
	Namespace          string         // prefixes every key; "overtake"
	Name               string         // the queue's name; "default"
	Levels             int            // priority levels, 0..Levels-1; 3
	LevelNames         []string       // names of the levels, lowest first
	Classes            map[string]int // logical priority classes to levels
	Shards             int            // hash tags the queue spreads over; 1
	MaxPayloadBytes    int            // largest payload; 1 MiB, negative: none
	MaxCheckpointBytes int            // largest checkpoint; 1 MiB, negative: none
	MaxResultBytes     int            // largest result; 1 MiB, negative: none
	ResultRetention    time.Duration  // how long a result is kept; 24 h
	WaitReplicas       int            // WAIT after every write when positive
	WaitTimeout        time.Duration  // bound of each WAIT; 1 s
	Retention          time.Duration  // how long a done record is kept; 0
	LeaseDuration      time.Duration  // a lease without heartbeat; 30 s
	AgeAfter           time.Duration  // aging period; 0: off
	// Backoff is the delay before retry number attempt (1-based).
	Backoff func(attempt int) time.Duration
	// Clock replaces Redis's clock in every script when set (tests).
	Clock          func() time.Time
	TracerProvider trace.TracerProvider          // of the producer span
	Propagator     propagation.TextMapPropagator // trace context in Headers
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
	if c.Shards == 0 {
		c.Shards = 1
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

// MaxShards is the most shards a queue may have (Config.Shards).
const MaxShards = 64

func (c Config) validate() error {
	switch {
	case c.Levels < 1 || c.Levels > maxLevels:
		return fmt.Errorf("%w: Levels must be 1..%d, got %d", ErrInvalidConfig, maxLevels, c.Levels)
	case c.Shards < 1 || c.Shards > MaxShards:
		return fmt.Errorf("%w: Shards must be 1..%d, got %d", ErrInvalidConfig, MaxShards, c.Shards)
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
