package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrShapeMismatch is returned when a Config's Levels or LevelNames
// differ from the shape the queue holds in Redis, or one of its Classes
// maps to another level than the stored shape's; the message names both.
var ErrShapeMismatch = errors.New("overtake: config disagrees with the queue's shape")

// ErrNoQueue is returned by ReadShape for a queue without a stored shape.
var ErrNoQueue = errors.New("overtake: no such queue")

// Shape is what every process of one queue must agree on, stored as JSON
// in the queue's shape key when the queue is first opened: the schema
// version of the data model, the levels with their names, lowest first,
// and the classes.
type Shape struct {
	Schema     int            `json:"schema"`
	LevelNames []string       `json:"levels"`
	Classes    map[string]int `json:"classes,omitempty"`
	// Shards is Config.Shards when above 1 (left out at 1, so a queue
	// without shards keeps its shape's bytes).
	Shards int `json:"shards,omitempty"`
}

// ShapeOf returns the shape cfg describes (with defaults filled in).
func ShapeOf(cfg Config) Shape {
	cfg = cfg.WithDefaults()
	s := Shape{Schema: schemaVersion, LevelNames: slices.Clone(cfg.LevelNames)}
	if len(cfg.Classes) > 0 {
		s.Classes = maps.Clone(cfg.Classes)
	}
	if cfg.Shards > 1 {
		s.Shards = cfg.Shards
	}
	return s
}

// Apply returns cfg with the levels, level names, classes and shards of s.
func (s Shape) Apply(cfg Config) Config {
	cfg.Levels, cfg.LevelNames, cfg.Classes = len(s.LevelNames), slices.Clone(s.LevelNames), maps.Clone(s.Classes)
	cfg.Shards = max(s.Shards, 1)
	return cfg
}

// shapeCheck remembers that a Store's shape matched the stored one, so the
// check runs once per Store.
type shapeCheck struct {
	ok atomic.Bool
	mu sync.Mutex // one check at a time until one succeeds
}

// shapeScript is lua/shape.lua: it writes the shape key unless it exists
// and returns the stored value.
var shapeScript = script("shape.lua")

// CheckShape records the Store's shape in Redis if the queue has none
// (lua/shape.lua, one round trip), adds to the stored shape the Store's
// classes it lacks, and compares it with the one Redis holds (see
// compareShape: a Store with fewer classes, or none, matches). It fails with ErrShapeMismatch when they differ, ErrSchema when
// the stored shape is of another schema version and ErrCorrupt when the
// key holds something else; on success, every later call of the Store
// skips the check.
func (c *Store) CheckShape(ctx context.Context) error {
	if c.parent != nil {
		return c.parent.ready(ctx) // the shape lives in shard 0
	}
	raw, err := json.Marshal(ShapeOf(c.cfg))
	if err != nil {
		return wrapf(err, "shape")
	}
	reply, err := shapeScript.Run(ctx, c.rdb, []string{c.keys.shape()}, raw).Slice()
	if err != nil {
		return wrapf(scriptErr(err), "shape of queue %q", c.cfg.Name)
	}
	var v string
	var ok int64
	if len(reply) == 2 {
		v, _ = reply[0].(string)
		ok, _ = reply[1].(int64)
	}
	if err := c.compareShape(v, string(raw), ok == 1); err != nil {
		return err
	}
	c.shape.ok.Store(true)
	return nil
}

// ShapeChecked reports whether CheckShape succeeded on the Store (it is
// then never run again).
func (c *Store) ShapeChecked() bool {
	if c.parent != nil {
		return c.parent.ShapeChecked()
	}
	return c.shape.ok.Load()
}

// ready runs CheckShape unless it already succeeded: the calls that read
// or write levels (enqueue, lease, heartbeat, stats, pause) make sure the
// queue's shape is the Store's before their first use of it. After the
// first success it costs one atomic load.
func (c *Store) ready(ctx context.Context) error {
	if c.parent != nil {
		return c.parent.ready(ctx)
	}
	if c.shape.ok.Load() {
		return nil
	}
	c.shape.mu.Lock()
	defer c.shape.mu.Unlock()
	if c.shape.ok.Load() {
		return nil
	}
	return c.CheckShape(ctx)
}

// compareShape returns the error of a Store whose shape mine (as JSON) the
// stored one (after shape.lua's merge) does not admit; admitted is
// shape.lua's verdict: the schema version, level count and level names
// must be equal, and each of mine's classes must map to the level the
// stored shape gives it. A Store with fewer classes, or none, is
// admitted: the classes a producer names are its own business, as long
// as no two processes map one name to two levels. The script decides, so
// that a producer's binary needs no JSON decoder; the messages show both
// shapes as they are.
func (c *Store) compareShape(stored, mine string, admitted bool) error {
	if admitted {
		return nil
	}
	if v, ok := shapeSchema(stored); !ok {
		return fmt.Errorf("%w: %s holds %q, not a queue shape", ErrCorrupt, c.keys.shape(), truncate(stored, 80))
	} else if v != strconv.Itoa(schemaVersion) {
		return fmt.Errorf("%w: queue %q (namespace %q) has a shape of schema version %s; this client reads version %d",
			ErrSchema, c.cfg.Name, c.cfg.Namespace, v, schemaVersion)
	}
	return fmt.Errorf("%w: queue %q (namespace %q) holds %s; this config has %s. Give this process the stored "+
		"Levels, LevelNames, Classes and Shards, or, to change the shape, stop the queue's processes, delete the shape key %s "+
		"and start them with the new config", ErrShapeMismatch, c.cfg.Name, c.cfg.Namespace, truncate(stored, 2000), mine,
		c.keys.shape())
}

// shapeSchema returns the schema version a stored shape starts with.
func shapeSchema(v string) (string, bool) {
	rest, ok := strings.CutPrefix(v, `{"schema":`)
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	return rest[:n], ok && n > 0 && n < len(rest) && (rest[n] == ',' || rest[n] == '}')
}

// ShapeRefused reports whether err, from CheckShape, says the Store may not
// use the queue (ErrShapeMismatch, ErrSchema, ErrCorrupt), not that Redis
// could not be asked.
func ShapeRefused(err error) bool {
	return errors.Is(err, ErrShapeMismatch) || errors.Is(err, ErrSchema) || errors.Is(err, ErrCorrupt)
}

// decodeShape parses the value of shape key k.
func decodeShape(k, v string) (Shape, error) {
	var s Shape
	if err := json.Unmarshal([]byte(v), &s); err != nil || s.Schema < 1 || len(s.LevelNames) == 0 {
		return Shape{}, fmt.Errorf("%w: %s holds %q, not a queue shape", ErrCorrupt, k, truncate(v, 80))
	}
	return s, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// ReadShape returns the shape stored for queue name of namespace ns, or
// ErrNoQueue when the queue has none (it was never opened, or only by a
// version of Overtake that did not record shapes).
func ReadShape(ctx context.Context, rdb redis.UniversalClient, ns, name string) (Shape, error) {
	k := newKeys(ns, name).shape()
	v, err := rdb.Get(ctx, k).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return Shape{}, fmt.Errorf("%w: %q in namespace %q", ErrNoQueue, name, ns)
	case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
		return Shape{}, fmt.Errorf("%w: %s is not a string", ErrCorrupt, k)
	case err != nil:
		return Shape{}, wrapf(err, "shape of queue %q", name)
	}
	return decodeShape(k, v)
}
