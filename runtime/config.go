package runtime

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
)

// Errors of the runtime, matched with errors.Is. A handler's context is
// cancelled with the cause handlers.ErrPreempted (more urgent work took its
// slot), handlers.ErrShutdown (the worker is shutting down),
// ErrTaskTimeout, or an error matching queue.ErrLeaseLost (the worker lost
// the task's lease; another worker may run it now).
var (
	// ErrTaskTimeout: the task ran past its Timeout; the attempt failed.
	ErrTaskTimeout = errors.New("overtake: task timeout")
	// ErrInvalidConfig is wrapped by every configuration error of New.
	ErrInvalidConfig = errors.New("overtake: invalid runtime config")
	// ErrNotStarted is returned by Shutdown before Start.
	ErrNotStarted = errors.New("overtake: runtime not started")
)

// UrgentStart chooses when a task that preempted another starts.
type UrgentStart int

const (
	// StartImmediately starts the urgent task at once. The pool runs over
	// capacity for at most the grace period while victims save their
	// checkpoint and return. This is the default: urgent latency is one
	// Redis round trip.
	StartImmediately UrgentStart = iota
	// StartAfterVictim starts the urgent task when its victim has returned
	// (or another slot frees first), so the pool never exceeds Concurrency.
	// A victim stuck past its grace period keeps its slot, and the urgent
	// task waits for another.
	StartAfterVictim
)

// Config configures a Runtime. Zero fields take the defaults documented on
// them.
type Config struct {
	// Concurrency is the number of tasks run at once. Defaults to 10; with
	// Autoscale, it is the starting value and defaults to Autoscale.Min;
	// with Pools, it is their total size.
	Concurrency int
	// Pools, when set, divide the slots into dedicated pools by band of
	// levels (see Pool). Defaults to one pool of Concurrency slots for
	// every level.
	Pools []Pool
	// Autoscale, when set, lets the concurrency follow the queue's backlog
	// within bounds (see Autoscale). nil, the default, keeps it fixed.
	Autoscale *Autoscale
	// WorkerID names this worker in the fleet. Defaults to
	// hostname-pid-random.
	WorkerID string
	// HeartbeatInterval is how often leases are extended and the worker
	// record refreshed, in one Redis call. Defaults to a third of the
	// queue's LeaseDuration (10 s).
	HeartbeatInterval time.Duration
	// PollInterval is the slow fallback poll of an idle worker, in case a
	// wake-up message was missed (Pub/Sub delivers each once, and not while
	// the connection is being re-established). Defaults to the heartbeat
	// interval (10 s). That is safe because the poll is only a fallback: an
	// idle worker is woken by Pub/Sub within a millisecond of an enqueue,
	// and sleeps exactly until the earliest delayed task, retry or lease
	// expiry its last lease call reported (LeaseResult.NextDue). So an idle
	// worker spends under 2 Redis commands a second: a heartbeat, a poll
	// and a PING of the wake-up subscription every 10 s, commands inside
	// the scripts included (guarded by TestIdleCostGuard).
	PollInterval time.Duration
	// GracePeriod is how long a preempted or shut-down task has to save its
	// checkpoint and return. Defaults to 5 s.
	GracePeriod time.Duration
	// ShutdownTimeout bounds the shutdown Run performs when its context
	// ends. Defaults to 30 s.
	ShutdownTimeout time.Duration
	// DrainTimeout is how long Shutdown lets running tasks finish on their
	// own before it preempts them. Defaults to zero: preempt at once, so a
	// rolling deploy is fast and loses no progress.
	DrainTimeout time.Duration
	// Preemption is the preemption policy. The zero value is the default
	// policy; set Preemption.Disabled to turn preemption off. Give every
	// worker of a fleet the same policy: a worker defers to another that
	// runs a lower eligible victim, or a less preempted one of the same
	// level, by its own policy's rules.
	Preemption preempt.Policy
	// UrgentStart chooses when a preempting task starts. Defaults to
	// StartImmediately.
	UrgentStart UrgentStart
	// Logger receives every state change. Defaults to warnings and errors
	// as JSON lines on stderr, so a worker that cannot reach Redis says so;
	// zap.NewNop() silences it.
	Logger *zap.Logger
	// TracerProvider makes the process spans. Defaults to the global one.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics. Defaults to the global one.
	MeterProvider metric.MeterProvider
	// MaxRedisBackoff caps the wait between attempts while Redis is
	// unreachable. Defaults to 2 s. The waits double from 10 ms, each
	// drawn between half and all of its bound (jitter), and start over
	// only after a call succeeded. While Redis cannot be reached the
	// worker makes one connection attempt per wait, all its loops
	// together (the dispatcher's probe: one dial and a PING, whatever
	// go-redis's MaxRetries and DialerRetries; with a *redis.Client,
	// standalone or Sentinel), and looks for work as soon as one succeeds.
	// For the first 2.5 s of an outage (a restart, a failover, a blip)
	// the waits stay under 100 ms; after that they are drawn at the cap,
	// which is then how long a worker may take to notice that Redis is
	// back: 2 s keeps a fleet to under one attempt a second per worker
	// against a Redis that is loading its data; 100 ms resumes within
	// about 100 ms for about ten attempts a second.
	MaxRedisBackoff time.Duration
	// StartTimeout bounds how long Start (and Run) waits for Redis to
	// answer the worker's first heartbeat, trying again on the
	// MaxRedisBackoff backoff; Start then fails with an error wrapping
	// ErrRedisUnreachable that names the address. A worker whose Redis
	// answers starts at once. Zero means the default, 30 s: a worker with
	// a wrong address, or started while Redis is down, exits with an error
	// instead of running without doing anything. A fleet that may start
	// before its Redis sets it longer. Negative: Start does not wait; the
	// worker starts and waits for Redis in the background, as long as it
	// runs.
	StartTimeout time.Duration
	// SLA is the longest wait each level allows, by level: e.g.
	// {2: 10 * time.Second}. A task leased after waiting longer, since it
	// last became pending (Task.ReadyAt, by the queue's clock), counts as
	// an SLA breach of the level it was enqueued at (Task.OriginalLevel,
	// which aging does not change): the metric overtake.sla.breaches, the
	// span event sla.breached, a Warn log line and RunStats.SLABreaches.
	// Levels without an entry have no SLA. Defaults to none.
	SLA map[int]time.Duration
	// Periodic are the tasks this runtime enqueues on a schedule (cron
	// expressions and intervals; see Periodic). Give every runtime of the
	// fleet the same schedules: each tick is enqueued once, by whichever
	// runtime comes first, while at least one of them runs. Defaults to
	// none.
	Periodic []Periodic
}

func (c Config) withDefaults(q *queue.Client) Config {
	c.Pools = slices.Clone(c.Pools)
	for i, p := range c.Pools {
		c.Pools[i].Autoscale = p.Autoscale.withDefaults()
		if p.Size == 0 && p.Autoscale != nil {
			c.Pools[i].Size = max(p.Autoscale.Min, 1)
		}
	}
	if c.Concurrency == 0 && len(c.Pools) > 0 && validatePools(c.Pools, q.Levels(), 0, c.Autoscale) == nil {
		for _, p := range c.Pools {
			c.Concurrency += p.Size
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = 10
		if c.Autoscale != nil {
			c.Concurrency = max(c.Autoscale.Min, 1)
		}
	}
	c.Autoscale = c.Autoscale.withDefaults()
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = host + "-" + strconv.Itoa(os.Getpid()) + "-" + store.NewSuffix()
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = q.Config().LeaseDuration / 3
	}
	if c.PollInterval == 0 {
		c.PollInterval = c.HeartbeatInterval
	}
	if c.GracePeriod == 0 {
		c.GracePeriod = 5 * time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = defaultLogger()
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.MaxRedisBackoff == 0 {
		c.MaxRedisBackoff = 2 * time.Second
	}
	c.Preemption = c.Preemption.WithDefaults()
	c.SLA = maps.Clone(c.SLA)
	c.Periodic = slices.Clone(c.Periodic)
	return c
}

// wakeCheckInterval is how long the wake-up subscription may stay silent
// before listen PINGs it to find a dead connection (go-redis's channel
// would every 3 s: a third of an idle worker's Redis commands). Missed
// wake-ups are covered by the slow poll, which runs as often, so a shorter
// check would not bound their delay any better.
func (c Config) wakeCheckInterval() time.Duration { return max(c.PollInterval, c.HeartbeatInterval) }

// defaultLogger writes warnings and errors as JSON lines to stderr.
func defaultLogger() *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), zapcore.WarnLevel))
}

func (c Config) validate(q *queue.Client) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	if err := validateSLA(c.SLA, q.Levels()); err != nil {
		return bad("%v", err)
	}
	if err := validatePools(c.Pools, q.Levels(), c.Concurrency, c.Autoscale); err != nil {
		return bad("%v", err)
	}
	if _, err := parseSchedules(c.Periodic); err != nil {
		return bad("%v", err)
	}
	for _, p := range c.Periodic {
		// Refused now, not at every tick: the queue's levels, names and
		// classes are known here.
		if err := q.Check(p.Task); err != nil {
			return fmt.Errorf("%w: periodic schedule %q: its task would be refused at every tick: %w",
				ErrInvalidConfig, p.Name, err)
		}
	}
	switch {
	case c.Concurrency < 1:
		return bad("Concurrency must be at least 1, got %d", c.Concurrency)
	case c.HeartbeatInterval <= 0 || c.HeartbeatInterval >= q.Config().LeaseDuration:
		return bad("HeartbeatInterval %v must be positive and under the lease duration %v",
			c.HeartbeatInterval, q.Config().LeaseDuration)
	case c.PollInterval < time.Millisecond:
		return bad("PollInterval %v is under 1ms", c.PollInterval)
	case c.GracePeriod < 0 || c.ShutdownTimeout < 0 || c.DrainTimeout < 0:
		return bad("negative GracePeriod, ShutdownTimeout or DrainTimeout")
	case c.MaxRedisBackoff < time.Millisecond:
		// A negative or tiny bound would retry a failing Redis thousands of
		// times a second.
		return bad("MaxRedisBackoff %v is under 1ms", c.MaxRedisBackoff)
	case c.UrgentStart != StartImmediately && c.UrgentStart != StartAfterVictim:
		return bad("unknown UrgentStart %d", c.UrgentStart)
	}
	if err := c.Preemption.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.Autoscale.validate(c.Concurrency); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}
