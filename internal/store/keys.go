package store

import (
	"strconv"
	"strings"
)

// schemaVersion is the version of the Redis data model this package reads
// and writes (the key "{ns:queue}:v" and the first field of every record).
// A worker that finds another version refuses with ErrSchema.
const schemaVersion = 2

// keys builds every Redis key of one queue. All share the hash tag
// {<ns>:<queue>} so that each script touches a single cluster slot.
//
// Namespace and name are escaped (see escapeName) so that two different
// (namespace, name) pairs never share a key: "billing:eu"/"jobs" and
// "billing"/"eu:jobs" get different prefixes.
type keys struct {
	prefix string // "{ns:queue}:"
}

func newKeys(ns, name string) keys { return shardKeys(ns, name, 0) }

// nameEscaper escapes the characters that would make a key ambiguous: the
// separator ':', the hash-tag braces and the escape character itself. Names
// without them are used as they are.
var nameEscaper = strings.NewReplacer("%", "%25", ":", "%3A", "{", "%7B", "}", "%7D")

func escapeName(s string) string { return nameEscaper.Replace(s) }

// Keys of a queue. A task is up to three keys: its record t:<id> (a
// STRING, written once at enqueue), its state s:<id> (a small STRING that
// exists only once the task left its first pending state) and its
// checkpoint c:<id> (only while one is saved). Its result res:<id> is a
// key of its own, with its own expiry, which outlives the other three (see
// result.go).
func (k keys) task(id string) string       { return k.prefix + "t:" + id }
func (k keys) state(id string) string      { return k.prefix + "s:" + id }
func (k keys) checkpoint(id string) string { return k.prefix + "c:" + id }
func (k keys) result(id string) string     { return k.prefix + "res:" + id }
func (k keys) pending(level int) string    { return k.prefix + "p:" + strconv.Itoa(level) }
func (k keys) leases() string              { return k.prefix + "leases" }
func (k keys) scheduled() string           { return k.prefix + "scheduled" }
func (k keys) dead() string                { return k.prefix + "dead" }
func (k keys) done() string                { return k.prefix + "done" }
func (k keys) running() string             { return k.prefix + "running" }
func (k keys) counts() string              { return k.prefix + "n" }
func (k keys) alive() string               { return k.prefix + "alive" }
func (k keys) capacity() string            { return k.prefix + "cap" }
func (k keys) busy() string                { return k.prefix + "busy" }
func (k keys) version() string             { return k.prefix + "v" }
func (k keys) paused() string              { return k.prefix + "paused" }
func (k keys) feed() string                { return k.prefix + "feed" }

// absent is a key no call ever writes, declared last in every script
// call's KEYS: its absence makes Redis Cluster refuse a script as a whole
// while the queue's slot migrates (see scriptKeys).
func (k keys) absent() string { return k.prefix + "absent" }

// shapeSuffix names the queue's shape key, <prefix>shape: a STRING holding
// the JSON of its Shape (schema version, level names, classes), written
// once when the queue is first opened (CheckShape).
const shapeSuffix = "shape"

func (k keys) shape() string { return k.prefix + shapeSuffix }

// wake is the Pub/Sub channel on which enqueue and requeue announce the
// level of a task that became pending.
func (k keys) wake() string { return k.prefix + "wake" }
