// Package engine is the runtime's side of a queue: the calls only
// Overtake's own packages make on a queue.Client (lease, reserve,
// heartbeat, ack, retry, requeue, rejoin, checkpoints), kept out of the
// public API. Of opens it; the protocol types are those of package
// internal/wire, instantiated for queue.Task.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/overtake/overtake/internal/wire"
	"github.com/overtake/overtake/queue"
)

// The protocol's types, for queue.Task.
type (
	// LeaseRequest asks for tasks for a worker.
	LeaseRequest = wire.LeaseRequest
	// LeaseGroup is one band of levels of a LeaseRequest.
	LeaseGroup = wire.LeaseGroup
	// LeaseResult is what one lease call got.
	LeaseResult = wire.LeaseResult[*queue.Task]
	// Malformed is a leased record that could not be decoded.
	Malformed = wire.Malformed[*queue.Task]
	// ReserveRequest asks to lease one urgent task for a saturated worker.
	ReserveRequest = wire.ReserveRequest
	// Heartbeat is one worker's periodic report.
	Heartbeat = wire.Heartbeat[*queue.Task]
	// LevelCounts are a worker's outcomes at one level, for the rates.
	LevelCounts = wire.LevelCounts
	// HeartbeatReply is what a heartbeat learns.
	HeartbeatReply = wire.HeartbeatReply[queue.PauseMode]
	// PoolLayout is one slot pool of a worker.
	PoolLayout = wire.PoolLayout
	// RequeueReason says why a running task goes back to its level.
	RequeueReason = wire.RequeueReason
)

// Reasons for Requeue.
const (
	RequeuePreempted = wire.RequeuePreempted
	RequeueShutdown  = wire.RequeueShutdown
	RequeueYield     = wire.RequeueYield
)

// Errors of the runtime's calls.
var (
	ErrFreeSlotInFleet      = wire.ErrFreeSlotInFleet
	ErrLowerVictimElsewhere = wire.ErrLowerVictimElsewhere
	ErrNoTask               = wire.ErrNoTask
)

// Queue is the runtime's side of a queue.Client; see the methods of the
// same names in package queue for what each does.
type Queue interface {
	Lease(ctx context.Context, req LeaseRequest) (*LeaseResult, error)
	Reserve(ctx context.Context, req ReserveRequest) (*queue.Task, *LeaseResult, error)
	Ack(ctx context.Context, t *queue.Task) error
	CarryAck(t *queue.Task) (wait func(context.Context) error, ok bool)
	FlushCarried(ctx context.Context)
	Retry(ctx context.Context, t *queue.Task, at time.Time, reason string) error
	Requeue(ctx context.Context, t *queue.Task, why RequeueReason) error
	Rejoin(ctx context.Context, t *queue.Task) error
	Heartbeat(ctx context.Context, hb Heartbeat) (*HeartbeatReply, error)
	Deregister(ctx context.Context, worker string) error
	SaveCheckpoint(ctx context.Context, taskID, token string, data []byte) (int64, error)
	Pending(ctx context.Context, level int) ([]string, error)
	PausedFromMessage(payload string) (map[int]queue.PauseMode, bool)
	TraceContext(ctx context.Context, t *queue.Task) context.Context
	WakeChannel() string
	Redis() redis.UniversalClient
	AddRunSpan(t *queue.Task, sc trace.SpanContext)
	RunSpanContexts(t *queue.Task) []trace.SpanContext
	RunNumber(t *queue.Task) int
}

// Of returns the runtime's side of q.
func Of(q *queue.Client) Queue {
	return q.Engine(wire.Key{}).(Queue)
}

// NewSuffix returns 6 random hex digits, to tell apart worker IDs made on
// one host by one process ID.
func NewSuffix() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
