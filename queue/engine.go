package queue

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/overtake/overtake/internal/wire"
)

// engine is the side of a Client that only Overtake's runtime calls:
// lease, reserve, heartbeat, ack, retry, requeue, rejoin, checkpoints. Its
// methods are exported so that package internal/engine can name them in an
// interface; the type is not, so they are not part of the API.
type engine struct{ *Client }

// The instances of the protocol's generic types for this package's tasks.
type (
	leaseResult    = wire.LeaseResult[*Task]
	malformedTask  = wire.Malformed[*Task]
	heartbeat      = wire.Heartbeat[*Task]
	heartbeatReply = wire.HeartbeatReply[PauseMode]
)

// Engine returns the runtime's side of c (lease, heartbeat, ack, requeue,
// ...). It is Overtake's plumbing, not API: its key can only be made
// inside the Overtake module (package internal/engine opens it).
func (c *Client) Engine(wire.Key) any { return engine{c} }

// AddRunSpan records sc as the process span of t's current run.
func (engine) AddRunSpan(t *Task, sc trace.SpanContext) { t.addRunSpan(sc) }

// RunSpanContexts returns the process spans of t's earlier runs.
func (engine) RunSpanContexts(t *Task) []trace.SpanContext { return t.runSpanContexts() }

// RunNumber returns which run of t this is, from 1.
func (engine) RunNumber(t *Task) int { return t.runNumber() }
