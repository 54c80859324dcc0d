package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// observer is the runtime's single place for logs, spans and metrics, so
// the engine's code reads as the protocol and nothing else.
type observer struct {
	r          *Runtime
	tracer     trace.Tracer
	metrics    *tracing.Metrics
	unregister func() error
}

func newObserver(r *Runtime) (*observer, error) {
	tp, mp := r.cfg.TracerProvider, r.cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m, err := tracing.NewMetrics(mp)
	if err != nil {
		return nil, err
	}
	unreg, err := m.RegisterDepth(r.q.Depths, r.q.LevelName, r.q.Name())
	if err != nil {
		return nil, err
	}
	return &observer{r: r, tracer: tracing.Tracer(tp), metrics: m, unregister: unreg}, nil
}

func (o *observer) close() {
	if err := o.unregister(); err != nil {
		o.r.log.Warn("unregister metrics", zap.Error(err))
	}
}

func (o *observer) labels(t *queue.Task) tracing.Labels {
	return tracing.Labels{Queue: o.r.q.Name(), Level: t.Level, LevelName: o.r.q.LevelName(t.Level)}
}

// taskLogger returns a logger whose every line carries the task's ID, type
// and level (and, once its span starts, the trace ID).
func (o *observer) taskLogger(t *queue.Task) *zap.Logger {
	return o.r.log.With(tracing.TaskFields(t.ID, t.Type, t.Level)...)
}

// leased starts the process span of a run (child of the enqueue span stored
// in the record) and records the wait time. Called before the run starts.
func (o *observer) leased(rn *run) {
	t := rn.t
	info := tracing.TaskInfo{Queue: o.r.q.Name(), ID: t.ID, Type: t.Type, Level: t.Level,
		LevelName: o.r.q.LevelName(t.Level), Attempt: t.Attempt, Preemptions: t.Preemptions}
	ctx, span := tracing.StartProcess(rn.ctx, o.tracer, info, t.Headers)
	rn.ctx, rn.span = ctx, span
	rn.log = rn.log.With(tracing.LogFields(ctx)...)
	if len(t.Checkpoint) > 0 {
		tracing.AddResumed(span, t.CheckpointSeq, t.Preemptions)
		rn.log.Info("task resumed from checkpoint", zap.Int64("checkpoint_seq", t.CheckpointSeq),
			zap.Int("preemptions", t.Preemptions))
	}
	if rn.preemptedBy != nil {
		tracing.AddPreemptedVictim(span, rn.victimSpan, rn.preemptedBy.ID, rn.preemptedBy.Level)
		rn.log.Info("urgent task started in a preempted task's slot",
			zap.String("victim_id", rn.preemptedBy.ID), zap.Int("victim_level", rn.preemptedBy.Level))
	} else {
		rn.log.Debug("task started")
	}
	if !t.ReadyAt.IsZero() {
		o.metrics.RecordWait(ctx, o.labels(t), time.Since(t.ReadyAt))
	}
}

// preempted records that victim gives way to urgent.
func (o *observer) preempted(victim, urgent *run, grace time.Duration) {
	if victim.span != nil {
		tracing.AddPreempted(victim.span, urgent.t.ID, urgent.t.Level, grace)
	}
	victim.log.Info("task preempted by more urgent work", zap.String("by_id", urgent.t.ID),
		zap.Int("by_level", urgent.t.Level), zap.Duration("grace", grace))
}

func (o *observer) checkpointSaved(rn *run, size int, seq int64) {
	if rn.span != nil {
		tracing.AddCheckpointSaved(rn.span, size, seq)
	}
	o.metrics.RecordCheckpoint(rn.ctx, o.labels(rn.t), size)
	rn.log.Debug("checkpoint saved", zap.Int("bytes", size), zap.Int64("checkpoint_seq", seq))
}

// ended closes the run's span with its outcome and records run metrics.
func (o *observer) ended(rn *run, out handlers.Outcome, runTime time.Duration, note string) {
	ctx, span, l := context.WithoutCancel(rn.ctx), rn.span, o.labels(rn.t)
	if span == nil {
		return
	}
	defer span.End()
	if note != "" {
		span.SetStatus(codes.Error, note)
		return
	}
	switch out.Action {
	case handlers.ActionDone:
		o.metrics.RecordRun(ctx, l, runTime, tracing.OutcomeSucceeded)
		span.SetStatus(codes.Ok, "")
	case handlers.ActionRequeue:
		reason := "yield"
		switch cause := context.Cause(rn.ctx); {
		case errors.Is(cause, ErrPreempted):
			reason = "preempted"
		case errors.Is(cause, ErrShutdown):
			reason = "shutdown"
		}
		tracing.AddRequeued(span, reason)
		o.metrics.RecordRun(ctx, l, runTime, tracing.OutcomePreempted)
		o.metrics.RecordRequeued(ctx, l)
	case handlers.ActionDead:
		span.RecordError(out.Err)
		span.SetStatus(codes.Error, out.Err.Error())
		tracing.AddDead(span, out.Err.Error())
		o.metrics.RecordRun(ctx, l, runTime, tracing.OutcomeFailed)
		o.metrics.RecordDead(ctx, l)
	default:
		span.RecordError(out.Err)
		span.SetStatus(codes.Error, out.Err.Error())
		if rn.t.Attempt+1 > rn.t.MaxRetries {
			tracing.AddDead(span, out.Err.Error())
			o.metrics.RecordDead(ctx, l)
		} else {
			tracing.AddRetry(span, rn.t.Attempt+1, out.Delay)
			o.metrics.RecordRetried(ctx, l)
		}
		o.metrics.RecordRun(ctx, l, runTime, tracing.OutcomeFailed)
	}
}
