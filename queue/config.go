package queue

import (
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/overtake/overtake/internal/store"
)

// Config configures a Client. The zero value is usable: WithDefaults fills
// every unset field with the default documented on it. Every process of
// one queue must agree on Levels, LevelNames and Classes (New).
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
	// map to one level (New).
	Classes map[string]int
	// Shards is how many hash tags the queue's keys spread over, so that
	// on a Redis Cluster one queue can use several masters' cores while
	// keeping one strict priority order. Defaults to 1: every key of the
	// queue in one slot, the layout of a queue without shards. A task
	// lives in one shard, chosen from its ID. Every process of a queue
	// must agree on Shards (New). docs/shards.md says what a
	// lease costs with more than one.
	Shards int
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
	// another AgeAfter, up to the top level. TaskInfo.OriginalLevel keeps the
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
	// Propagator writes the producer's trace context into TaskInfo.Headers at
	// enqueue and reads it back for the worker's process span. Defaults to
	// W3C TraceContext plus Baggage, not the
	// otel global, whose default propagates nothing: producers and workers
	// must agree on it, and a trace must not break because one process
	// left the global unset.
	Propagator propagation.TextMapPropagator
}

// WithDefaults returns a copy of c with every unset field set to its
// default.
func (c Config) WithDefaults() Config { return Config(store.Config(c).WithDefaults()) }
