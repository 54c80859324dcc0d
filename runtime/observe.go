package runtime

import (
	"github.com/overtake/overtake/internal/outcome"

	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/telemetry"
)

// observer is the runtime's single place for logs, spans and metrics, so
// the engine's code reads as the protocol and nothing else.
type observer struct {
	r          *Runtime
	clock      func() time.Time // the queue's, which stamps ReadyAt
	tracer     trace.Tracer
	tp         trace.TracerProvider
	metrics    *telemetry.Metrics
	unregister func() error
	// noSpan is what trace.SpanFromContext returns for a context with no
	// span (leased masks any other).
	noSpan trace.Span
	// slaBreaches counts runs leased past their level's SLA
	// (RunStats.SLABreaches).
	slaBreaches atomic.Int64
}

func newObserver(r *Runtime) (*observer, error) {
	tp, mp := r.cfg.TracerProvider, r.cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m, err := telemetry.NewMetrics(mp)
	if err != nil {
		return nil, err
	}
	return &observer{r: r, clock: r.q.Config().Clock, tracer: telemetry.Tracer(tp), tp: tp, metrics: m,
		noSpan: trace.SpanFromContext(context.Background())}, nil
}

// register installs the observable gauges (queue depth), from Start; close
// removes them, from Shutdown.
func (o *observer) register() error {
	unreg, err := o.metrics.RegisterDepth(o.r.q.Depths, o.r.q.LevelName, o.r.q.Name())
	if err != nil {
		return err
	}
	o.unregister = unreg
	return nil
}

func (o *observer) close() {
	if o.unregister == nil {
		return
	}
	if err := o.unregister(); err != nil {
		o.r.log.Warn("unregister metrics", zap.Error(err))
	}
}

func (o *observer) labels(t *store.Task) telemetry.Labels {
	return telemetry.Labels{Queue: o.r.q.Name(), Level: t.Level, LevelName: o.r.q.LevelName(t.Level)}
}

// taskLogger gives rn its logger (runLog, built on its first kept line):
// every line carries the task's ID, type and level, and the trace ID of
// the producer's trace when the record has one (the process span joins
// that trace; leased adds its span ID).
func (o *observer) taskLogger(rn *run) { rn.log.init(o.r.log, o, rn.t) }

// producer returns the span context of t's enqueue span, from its record.
func (o *observer) producer(t *store.Task) trace.SpanContext {
	return trace.SpanContextFromContext(o.r.eng.TraceContext(context.Background(), &t.Info))
}

// leased starts the process span of a run, records the wait time and checks
// it against the SLA (Config.SLA). Called
// before the run starts. The span's parent is the enqueue span stored in the
// record (never a span that happens to be in the runtime's base context), so
// every run of a task is in the producer's trace; it links to the process
// spans of the task's earlier runs, and is added to them for the next run.
func (o *observer) leased(rn *run) {
	t := rn.t
	// A span in the runtime's base context is masked; most bases have
	// none, and a mask costs two allocations.
	base := rn.ctx
	if trace.SpanFromContext(base) != o.noSpan {
		base = trace.ContextWithSpanContext(base, trace.SpanContext{})
	}
	parent := o.r.eng.TraceContext(base, &t.Info)
	// With the default provider and none registered behind it, or the
	// no-op one, the span would record nothing and carry the parent's span
	// context: the parent's stands in for it, without building its
	// attributes and links.
	ctx, span := parent, trace.SpanFromContext(parent)
	if !telemetry.Silent(o.tp) {
		info := telemetry.TaskInfo{Queue: o.r.q.Name(), ID: t.ID, Type: t.Type, Level: t.Level,
			LevelName: o.r.q.LevelName(t.Level), Attempt: t.Attempt, Preemptions: t.Preemptions, Class: t.Class,
			Run: o.r.eng.RunNumber(t)}
		opts := telemetry.PreviousRunLinks(o.r.eng.RunSpanContexts(t))
		ctx, span = telemetry.StartProcess(parent, o.tracer, info, nil, opts...)
	}
	rn.ctx, rn.span = ctx, span
	// A no-op tracer hands back the parent's span context: not a span of ours.
	psc, sc := trace.SpanContextFromContext(parent), span.SpanContext()
	if sc.IsValid() && sc.SpanID() != psc.SpanID() {
		o.r.eng.AddRunSpan(t, sc)
		rn.log.span = sc // its logger, not built yet, names the span
	}
	if len(t.Checkpoint) > 0 {
		telemetry.AddResumed(span, t.CheckpointSeq, t.Preemptions)
		rn.log.Info("task resumed from checkpoint", zap.Int64("checkpoint_seq", t.CheckpointSeq),
			zap.Int("preemptions", t.Preemptions))
	}
	if rn.tookSlotOf != nil {
		telemetry.AddPreemptedVictim(span, rn.victimSpan, rn.tookSlotOf.ID, rn.tookSlotOf.Level)
		rn.log.Info("urgent task started in a preempted task's slot",
			zap.String("victim_id", rn.tookSlotOf.ID), zap.Int("victim_level", rn.tookSlotOf.Level))
	} else {
		rn.log.Debug("task started")
	}
	if !t.ReadyAt.IsZero() {
		// Both ends by the queue's clock (Redis's, or the injected one).
		leased := t.LeasedAt
		if leased.IsZero() {
			leased = o.clock()
		}
		wait := max(leased.Sub(t.ReadyAt), 0)
		o.metrics.RecordWait(ctx, o.labels(t), wait)
		o.checkSLA(ctx, rn, wait)
	}
}

// preempted records that victim gives way to urgent.
func (o *observer) preempted(victim, urgent *run, grace time.Duration) {
	if victim.span != nil {
		telemetry.AddPreempted(victim.span, urgent.t.ID, urgent.t.Level, grace)
	}
	victim.log.Info("task preempted by more urgent work", zap.String("by_id", urgent.t.ID),
		zap.Int("by_level", urgent.t.Level), zap.Duration("grace", grace))
}

func (o *observer) checkpointSaved(rn *run, size int, seq int64) {
	if rn.span != nil {
		telemetry.AddCheckpointSaved(rn.span, size, seq)
	}
	o.metrics.RecordCheckpoint(rn.ctx, o.labels(rn.t), size)
	rn.log.Debug("checkpoint saved", zap.Int("bytes", size), zap.Int64("checkpoint_seq", seq))
}

// unsavedPreemption records a preempted run that returned with no
// checkpoint saved during the run (completer.unsavedPreemption): the
// overtake.checkpoint.missed counter always, the warning when log says
// so, with skipped, the runs of its type not logged since the last line.
func (o *observer) unsavedPreemption(rn *run, log bool, skipped int) {
	o.metrics.RecordCheckpointMissed(rn.detached(), o.labels(rn.t), rn.t.Type)
	if log {
		rn.log.Warn("preempted with no checkpoint saved: the next run starts over",
			zap.Int64("checkpoint_seq", rn.cp.Seq()), zap.Int("not_logged", skipped))
	}
}

// resultStored records that rn's handler stored its task's result.
func (o *observer) resultStored(rn *run, size int) {
	if rn.span != nil {
		telemetry.AddResultStored(rn.span, size)
	}
	rn.log.Debug("result stored", zap.Int("bytes", size))
}

// ended closes the run's span with its outcome and records run metrics.
func (o *observer) ended(rn *run, out outcome.Outcome, runTime time.Duration, note string) {
	ctx, span, l := rn.detached(), rn.span, o.labels(rn.t)
	if span == nil {
		return
	}
	defer span.End()
	if note != "" {
		if out.Err != nil {
			recordError(span, out.Err)
		}
		span.SetStatus(codes.Error, note)
		return
	}
	result := telemetry.RunFailed
	switch out.Action {
	case outcome.ActionDone:
		result = telemetry.RunSucceeded
	case outcome.ActionRequeue:
		result = telemetry.RunPreempted
	case outcome.ActionCancel:
		result = telemetry.RunCanceled
	}
	preempted := out.Action == outcome.ActionRequeue && errors.Is(context.Cause(rn.ctx), handlers.ErrPreempted)
	if span.IsRecording() { // else the attributes would cost an allocation for nothing
		span.SetAttributes(telemetry.OutcomeKey.String(result.String()), telemetry.RunPreemptedKey.Bool(preempted))
	}
	switch out.Action {
	case outcome.ActionDone:
		o.metrics.RecordRun(ctx, l, runTime, telemetry.RunSucceeded)
		span.SetStatus(codes.Ok, "")
	case outcome.ActionCancel:
		telemetry.AddCanceled(span)
		o.metrics.RecordRun(ctx, l, runTime, telemetry.RunCanceled)
	case outcome.ActionRequeue:
		telemetry.AddRequeued(span, string(requeueReason(rn.ctx)))
		o.metrics.RecordRun(ctx, l, runTime, telemetry.RunPreempted)
		o.metrics.RecordRequeued(ctx, l)
	case outcome.ActionDead:
		recordError(span, out.Err)
		span.SetStatus(codes.Error, out.Err.Error())
		telemetry.AddDead(span, out.Err.Error())
		o.metrics.RecordRun(ctx, l, runTime, telemetry.RunFailed)
		o.metrics.RecordDead(ctx, l)
	default:
		recordError(span, out.Err)
		span.SetStatus(codes.Error, out.Err.Error())
		if !rn.t.RetriesLeft() {
			telemetry.AddDead(span, exhaustedReason(rn.t, out.Err))
			o.metrics.RecordDead(ctx, l)
		} else {
			telemetry.AddRetry(span, rn.t.Attempt+1, out.Delay)
			o.metrics.RecordRetried(ctx, l)
		}
		o.metrics.RecordRun(ctx, l, runTime, telemetry.RunFailed)
	}
}

// recordError adds the exception event for err; a handler's panic
// (exception.type *handlers.PanicError) carries the panicking goroutine's
// stack as exception.stacktrace.
func recordError(span trace.Span, err error) {
	var perr *handlers.PanicError
	if errors.As(err, &perr) {
		span.RecordError(err, trace.WithAttributes(semconv.ExceptionStacktrace(string(perr.Stack))))
		return
	}
	span.RecordError(err)
}
