package main

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap/zaptest"
)

// One round on an in-process Redis, spans recorded in memory: the round is
// one trace holding every event the example is there to show.
func TestOneRound(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, rdb, config{rounds: 1, step: 40 * time.Millisecond, tp: tp, log: zaptest.NewLogger(t),
		out: &out, backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())

	spans := rec.Ended()
	events := map[string]int{}
	var links int
	names := map[string]int{}
	for _, s := range spans {
		if s.SpanContext().TraceID() != spans[0].SpanContext().TraceID() {
			t.Errorf("span %s is not in the round's trace", s.Name())
		}
		names[s.Name()]++
		links += len(s.Links())
		for _, e := range s.Events() {
			events[e.Name]++
		}
	}
	// 4 tasks, named by their type; one report and sync run twice.
	for name, n := range map[string]int{"enqueue example/report": 2, "process example/report": 3,
		"process example/alert": 1, "process example/sync": 2, "enqueue example/sync": 1} {
		if names[name] != n {
			t.Errorf("%d %q spans, want %d (all: %v)", names[name], name, n, names)
		}
	}
	// The resumed report, the retried sync and the alert (to its victim).
	if links != 3 {
		t.Errorf("links = %d, want 3", links)
	}
	for _, name := range []string{"preempted", "checkpoint.saved", "requeued", "resumed", "preempted.victim", "retry"} {
		if events[name] == 0 {
			t.Errorf("no %q event; events: %v", name, events)
		}
	}
	if !slices.ContainsFunc(spans, func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "round 1" }) {
		t.Error("no round span")
	}
}
