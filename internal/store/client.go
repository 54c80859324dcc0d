package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/overtake/overtake/internal/telemetry"

	"github.com/redis/go-redis/v9"
)

// Store speaks to Redis about the tasks of one queue. It is safe for
// concurrent use and holds no global state.
type Store struct {
	rdb    redis.UniversalClient
	cfg    Config
	keys   keys
	sk     scriptKeys // the fixed KEYS of each script
	tracer trace.Tracer
	prop   telemetry.Propagator
	// serverTime: no Clock was injected (Config.serverTime), so scripts
	// use Redis's TIME.
	serverTime bool
	acks       groupCommit[finishOp] // concurrent Acks share calls
	carried    groupCommit[finishOp] // acks queued for the next lease call (CarryAck)
	enqs       groupCommit[*enqWait] // concurrent Enqueues share calls
	sweep      sweeper
	shape      shapeCheck // the shape matched the stored one (CheckShape)
	replicas   replicaWatch
	// shards are the queue's shards, c itself first, when Config.Shards
	// is above 1 (shards.go); parent is shard 0 in the other shards'
	// Stores, whose shape check is its.
	shards []*Store
	parent *Store
	views  shardViews // shard 0's: what its sharded leases allocate from (shards_view.go)
	fill   shardFill  // shard 0's: where made IDs go (fillShard)
}

// New returns a client for the queue cfg names on rdb, which may be a
// standalone, Sentinel or Cluster client.
func New(rdb redis.UniversalClient, cfg Config) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("overtake: queue.New: nil redis client")
	}
	serverTime := cfg.serverTime()
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Store{rdb: rdb, cfg: cfg, keys: newKeys(cfg.Namespace, cfg.Name), serverTime: serverTime,
		tracer: telemetry.Tracer(cfg.TracerProvider), prop: telemetry.NewPropagator(cfg.Propagator)}
	c.init()
	c.newShards()
	return c, nil
}

// init sets up what New builds from c's keys and Config: the scripts'
// fixed keys and the group commits.
func (c *Store) init() {
	c.sk = newScriptKeys(c.keys, c.cfg.Levels)
	c.acks.limit, c.acks.send = maxAckBatch, c.finishBatch
	c.carried.limit, c.carried.send = maxAckBatch, c.finishBatch
	c.enqs.limit, c.enqs.send, c.enqs.flushers, c.enqs.minBatch = maxEnqueueBatch, c.enqueueGroup, enqueueFlushers, enqueueMinBatch
}

// Config returns the client's configuration with defaults filled in.
func (c *Store) Config() Config { return c.cfg }

// Redis returns the underlying Redis client.
func (c *Store) Redis() redis.UniversalClient { return c.rdb }

// Name returns the queue's name.
func (c *Store) Name() string { return c.cfg.Name }

// Levels returns the number of priority levels.
func (c *Store) Levels() int { return c.cfg.Levels }

// WakeChannel is the Pub/Sub channel on which the queue announces, with the
// level as the message, every task that becomes pending, and with the
// message "s" every delayed task enqueued (workers then look up its due
// time).
func (c *Store) WakeChannel() string { return c.keys.wake() }

// WakeChannels are the wake channels of every shard (WakeChannel of each),
// shard 0's first: a worker subscribes to all of them.
func (c *Store) WakeChannels() []string {
	out := make([]string, 0, len(c.Shards()))
	for _, s := range c.Shards() {
		out = append(out, s.keys.wake())
	}
	return out
}

// CheckChannel is the Pub/Sub channel on which worker checks its own
// wake-up subscription: it subscribes to it with WakeChannel and publishes
// to it through its commands' connections, so a subscription left on
// another server than those (an old primary after a failover) receives
// nothing and the publish reaches no one. It shares the queue's hash tag,
// so on a Cluster both channels live on the queue's node.
func (c *Store) CheckChannel(worker string) string { return c.keys.wake() + ":" + escapeName(worker) }

// newID returns 16 random bytes as hex.
func newID() string {
	var h [32]byte
	randomHex(&h)
	return string(h[:]) // one allocation (hex.EncodeToString makes two)
}

// randomHex fills h with 16 random bytes as hex.
func randomHex(h *[32]byte) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	hex.Encode(h[:], b[:])
}

// newToken returns a fresh random lease token.
func newToken() string { return newID()[:20] }

// now is the client's idea of the current time: the injected clock, else
// time.Now. It only turns the API's absolute times into delays; scripts
// take the time from Redis (see scriptNow).
func (c *Store) now() time.Time { return c.cfg.Clock() }

// scriptNow is the ARGV "now" of a script: "" to use Redis's clock, or the
// injected clock's milliseconds.
func (c *Store) scriptNow() string {
	if c.serverTime {
		return ""
	}
	return strconv.FormatInt(c.cfg.Clock().UnixMilli(), 10)
}

// scriptErr maps the errors scripts raise to the package's sentinels.
func scriptErr(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, leaseLostMsg):
		return ErrLeaseLost
	case strings.Contains(msg, corruptMsg+" "):
		return fmt.Errorf("%w: %s", ErrCorrupt, msg[strings.Index(msg, corruptMsg+" ")+len(corruptMsg)+1:])
	case strings.Contains(msg, schemaMsg+" "):
		return fmt.Errorf("%w: %s", ErrSchema, msg[strings.Index(msg, schemaMsg+" ")+len(schemaMsg)+1:])
	}
	return err
}

// NewSuffix returns 6 random hex digits, to tell apart worker IDs made on
// one host by one process ID.
func NewSuffix() string { return newID()[:6] }

// Source is what a queue.Client tells of itself: its Redis client and its
// validated Config, a queue.Config, which is Config's struct (C).
type Source[C ~configFields] interface {
	Redis() redis.UniversalClient
	Config() C
}

// Of returns a store over the queue src describes: its own connection
// state (group commits, scripts) on src's Redis client and Config, and
// src's shape check when src has passed it (a ShapeChecked method). The
// Config of a queue.Client was validated when it was opened, so New
// cannot fail on it; Of panics if it does.
func Of[C ~configFields](src Source[C]) *Store {
	s, err := New(src.Redis(), Config(src.Config()))
	if err != nil {
		panic(fmt.Sprintf("overtake: store.Of: %v", err))
	}
	if c, ok := src.(interface{ ShapeChecked() bool }); ok && c.ShapeChecked() {
		s.shape.ok.Store(true) // the same Config, checked already
	}
	return s
}
