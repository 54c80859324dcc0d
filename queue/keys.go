package queue

import "strconv"

// keys builds every Redis key of one queue. All share the hash tag
// {<ns>:<queue>} so that each script touches a single cluster slot.
type keys struct {
	prefix string // "{ns:queue}:"
}

func newKeys(ns, name string) keys { return keys{prefix: "{" + ns + ":" + name + "}:"} }

func (k keys) task(id string) string    { return k.prefix + "t:" + id }
func (k keys) pending(level int) string { return k.prefix + "p:" + strconv.Itoa(level) }
func (k keys) leases() string           { return k.prefix + "leases" }
func (k keys) scheduled() string        { return k.prefix + "scheduled" }
func (k keys) dead() string             { return k.prefix + "dead" }
func (k keys) done() string             { return k.prefix + "done" }
func (k keys) running() string          { return k.prefix + "running" }
func (k keys) counts() string           { return k.prefix + "cnt" }
func (k keys) alive() string            { return k.prefix + "alive" }
func (k keys) capacity() string         { return k.prefix + "cap" }
func (k keys) busy() string             { return k.prefix + "busy" }

// wake is the Pub/Sub channel on which enqueue and requeue announce the
// level of a task that became pending.
func (k keys) wake() string { return k.prefix + "wake" }
