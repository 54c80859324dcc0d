package telemetry

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// AddPreempted records on the victim's span that the task was told to give
// way to task byID at level byLevel, with grace to save a checkpoint.
func AddPreempted(span trace.Span, byID string, byLevel int, grace time.Duration) {
	span.AddEvent(EventPreempted, trace.WithAttributes(
		PreemptedByKey.String(byID),
		PreemptedByLevelKey.Int(byLevel),
		GraceMsKey.Int64(grace.Milliseconds()),
	))
}

// AddPreemptedVictim records on the preemptor's span that it displaced
// task victimID at victimLevel, and links the span to the victim's span
// context when that is valid (the victim's live span, or
// [SpanContextFromHeaders] of its record when it ran elsewhere). The link
// carries overtake.link.kind = victim and overtake.victim.id; since
// Jaeger's UI shows no link attributes, the span also gets
// overtake.victim.span_id, the span ID its reference shows.
func AddPreemptedVictim(span trace.Span, victim trace.SpanContext, victimID string, victimLevel int) {
	if victim.IsValid() {
		span.AddLink(trace.Link{SpanContext: victim, Attributes: []attribute.KeyValue{
			LinkKindKey.String(LinkVictim), VictimIDKey.String(victimID)}})
		span.SetAttributes(VictimSpanIDKey.String(victim.SpanID().String()))
	}
	span.AddEvent(EventPreemptedVictim, trace.WithAttributes(
		VictimIDKey.String(victimID),
		LevelKey.Int(victimLevel),
	))
}

// AddCheckpointSaved records a saved checkpoint of size bytes and
// sequence seq.
func AddCheckpointSaved(span trace.Span, size int, seq int64) {
	span.AddEvent(EventCheckpointSaved, trace.WithAttributes(
		CheckpointBytesKey.Int(size),
		CheckpointSeqKey.Int64(seq),
	))
}

// AddResultStored records a stored result of size bytes.
func AddResultStored(span trace.Span, size int) {
	span.AddEvent(EventResultStored, trace.WithAttributes(ResultBytesKey.Int(size)))
}

// AddResumed records that the run starts from checkpoint seq after the
// task gave way preemptions times.
func AddResumed(span trace.Span, seq int64, preemptions int) {
	span.AddEvent(EventResumed, trace.WithAttributes(
		CheckpointSeqKey.Int64(seq),
		PreemptionsBeforeKey.Int(preemptions),
	))
}

// AddRequeued records that the task went back to the head of its level;
// reason is e.g. "preempted", "shutdown" or "recovered".
func AddRequeued(span trace.Span, reason string) {
	span.AddEvent(EventRequeued, trace.WithAttributes(ReasonKey.String(reason)))
}

// AddRetry records that attempt failed and the task retries after delay.
// Record the error itself with span.RecordError.
func AddRetry(span trace.Span, attempt int, delay time.Duration) {
	span.AddEvent(EventRetry, trace.WithAttributes(
		AttemptKey.Int(attempt),
		RetryDelayMsKey.Int64(delay.Milliseconds()),
	))
}

// AddDead records that the task was dead-lettered for reason, and marks
// the span overtake.dead = true: a search for that tag finds the traces
// whose task failed for good, where error=true also finds failed runs that
// a retry made good.
func AddDead(span trace.Span, reason string) {
	span.AddEvent(EventDead, trace.WithAttributes(ReasonKey.String(reason)))
	span.SetAttributes(DeadKey.Bool(true))
}

// AddCanceled records that the run ended canceled.
func AddCanceled(span trace.Span) {
	span.AddEvent(EventCanceled)
}

// PreviousRunLinks returns the start options of a run's process span for
// the task's earlier runs prev (oldest first): a link to each, with
// overtake.link.kind = previous_run, and the span attribute
// overtake.previous_run.span_ids listing their span IDs, which Jaeger's
// UI shows where it shows no link attributes. Nil for no earlier run.
func PreviousRunLinks(prev []trace.SpanContext) []trace.SpanStartOption {
	links := make([]trace.Link, 0, len(prev))
	ids := make([]string, 0, len(prev))
	for _, sc := range prev {
		if !sc.IsValid() {
			continue
		}
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{LinkKindKey.String(LinkPreviousRun)}})
		ids = append(ids, sc.SpanID().String())
	}
	if len(links) == 0 {
		return nil
	}
	return []trace.SpanStartOption{trace.WithLinks(links...), trace.WithAttributes(PreviousRunSpanIDsKey.StringSlice(ids))}
}

// AddSLABreached records that the task waited wait before this run, longer
// than sla, the SLA of level (the level whose SLA applies: the one the
// task was enqueued at).
func AddSLABreached(span trace.Span, level int, wait, sla time.Duration) {
	span.AddEvent(EventSLABreached, trace.WithAttributes(
		LevelKey.Int(level),
		WaitMsKey.Int64(wait.Milliseconds()),
		SLAMsKey.Int64(sla.Milliseconds()),
	))
}
