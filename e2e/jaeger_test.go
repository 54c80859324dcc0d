package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/overtake/overtake/tracing/otlp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

// Environment set by scripts/jaeger.sh (make test/jaeger).
const (
	envOTLPGRPC = "OVERTAKE_JAEGER_OTLP_GRPC"
	envOTLPHTTP = "OVERTAKE_JAEGER_OTLP_HTTP"
	envQuery    = "OVERTAKE_JAEGER_QUERY"
)

// jaegerEnv returns the Jaeger endpoints, skipping the test without them.
func jaegerEnv(t *testing.T) (grpcAddr, httpAddr, query string) {
	t.Helper()
	grpcAddr, httpAddr, query = os.Getenv(envOTLPGRPC), os.Getenv(envOTLPHTTP), os.Getenv(envQuery)
	if grpcAddr == "" || httpAddr == "" || query == "" {
		t.Skipf("%s, %s and %s unset: run `make test/jaeger` (it starts Jaeger)", envOTLPGRPC, envOTLPHTTP, envQuery)
	}
	return grpcAddr, httpAddr, query
}

// A preemption, exported over OTLP (gRPC and HTTP) to a real Jaeger and read
// back from its query API: the victim's trace holds the enqueue span and two
// process spans, the first with preempted, checkpoint.saved and requeued, the
// second with resumed and a link to the first; the urgent task's process span
// has preempted.victim and a link into the victim's trace. A task that fails
// once shows an error span and a retry linked to it.
func TestJaegerPreemptionTrace(t *testing.T) {
	grpcAddr, httpAddr, query := jaegerEnv(t)
	for _, proto := range []struct {
		name     otlp.Protocol
		endpoint string
	}{{otlp.ProtocolGRPC, grpcAddr}, {otlp.ProtocolHTTP, httpAddr}} {
		t.Run(string(proto.name), func(t *testing.T) {
			bs := testredis.Backends(t)
			b := bs[len(bs)-1] // a real Redis when there is one
			var rnd [4]byte
			_, _ = rand.Read(rnd[:])
			svc := "overtake-e2e-" + hex.EncodeToString(rnd[:])
			ids := runPreemptionScenario(t, b, svc, proto.name, proto.endpoint)
			checkJaegerTraces(t, newJaegerClient(query), svc, ids)
		})
	}
}

// scenarioIDs are the task IDs of one scenario run.
type scenarioIDs struct {
	low, urgent, flaky string
}

// runPreemptionScenario runs low (level 0, checkpoints, preempted, resumes),
// urgent (level 2, preempts it) and flaky (fails once, then succeeds) on a
// one-slot worker whose spans go to Jaeger under service svc.
func runPreemptionScenario(t *testing.T, b testredis.Backend, svc string, proto otlp.Protocol, endpoint string) scenarioIDs {
	ctx := context.Background()
	p, err := otlp.Setup(ctx, otlp.WithServiceName(svc), otlp.WithProtocol(proto),
		otlp.WithEndpoint(endpoint), otlp.WithInsecure(), otlp.WithoutMetrics())
	require.NoError(t, err)
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, p.Shutdown(sctx), "flush spans to Jaeger")
	}()

	q, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "jobs",
		TracerProvider: p.TracerProvider,
		Backoff:        func(int) time.Duration { return 10 * time.Millisecond }})
	require.NoError(t, err)

	type progress struct{ Step int }
	lowStarted := make(chan progress, 2)
	urgentDone, flakyDone := make(chan struct{}, 1), make(chan struct{}, 1)
	var flakyRuns atomic.Int32
	mux := handlers.NewMux()
	mux.HandleFunc("report", func(ctx context.Context, _ *queue.TaskInfo) error {
		p, _, err := checkpoint.Load[progress](ctx)
		if err != nil {
			return err
		}
		if p.Step > 0 { // resumed
			lowStarted <- p
			return nil
		}
		if err := checkpoint.Save(ctx, progress{Step: 5}); err != nil {
			return err
		}
		lowStarted <- p
		<-ctx.Done() // preempted
		if err := checkpoint.Save(ctx, progress{Step: 7}); err != nil {
			return err
		}
		return context.Cause(ctx)
	})
	mux.HandleFunc("page", func(context.Context, *queue.TaskInfo) error {
		urgentDone <- struct{}{}
		return nil
	})
	mux.HandleFunc("flaky", func(context.Context, *queue.TaskInfo) error {
		if flakyRuns.Add(1) == 1 {
			return errors.New("flaky failure")
		}
		flakyDone <- struct{}{}
		return nil
	})
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 1, GracePeriod: 5 * time.Second,
		PollInterval: 50 * time.Millisecond, TracerProvider: p.TracerProvider,
		MeterProvider: p.MeterProvider, Logger: zaptest.NewLogger(t)})
	require.NoError(t, err)
	require.NoError(t, rt.Start(ctx))
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(sctx))
	}()

	enqueue := func(typ string, opts ...queue.Option) string {
		tk, err := q.Enqueue(ctx, queue.NewTask(typ, nil), opts...)
		require.NoError(t, err)
		return tk.ID
	}
	var ids scenarioIDs
	ids.low = enqueue("report", queue.LevelNamed("low"))
	require.Equal(t, progress{}, recv(t, lowStarted, "low task start"))
	ids.urgent = enqueue("page", queue.LevelNamed("high"))
	recv(t, urgentDone, "urgent task")
	require.Equal(t, progress{Step: 7}, recv(t, lowStarted, "low task resumed"))
	// The resumed run signals before it returns: until its task is acked,
	// the flaky task (a higher level) would preempt it, a true story in
	// Jaeger but not this scenario's.
	acked := func(ids ...string) {
		for _, id := range ids {
			require.Eventually(t, func() bool {
				_, err := q.Inspect(ctx, id)
				return errors.Is(err, queue.ErrTaskNotFound)
			}, 10*time.Second, 10*time.Millisecond, "task %s acked", id)
		}
	}
	acked(ids.low, ids.urgent)
	ids.flaky = enqueue("flaky", queue.LevelNamed("normal"))
	recv(t, flakyDone, "flaky task's second run")
	acked(ids.flaky)
	return ids
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// taskTrace is one task's trace as Jaeger returns it.
type taskTrace struct {
	trace   jaegerTrace
	enqueue jaegerSpan
	process []jaegerSpan // in start order
}

// findTask returns the trace of task id among traces, or false while Jaeger
// does not hold its enqueue span and want process spans yet.
func findTask(traces []jaegerTrace, id string, want int) (taskTrace, bool) {
	for _, tr := range traces {
		var tt taskTrace
		found := false
		for _, s := range tr.Spans {
			if s.tag("messaging.message.id") != id {
				continue
			}
			switch s.tag("messaging.operation.name") {
			case "enqueue":
				tt.enqueue, found = s, true
			case "process":
				tt.process = append(tt.process, s)
			}
		}
		if found && len(tt.process) == want {
			slices.SortFunc(tt.process, func(a, b jaegerSpan) int { return int(a.StartTime - b.StartTime) })
			tt.trace = tr
			return tt, true
		}
	}
	return taskTrace{}, false
}

// checkJaegerTraces polls Jaeger's query API until the scenario's traces
// are complete, then checks spans, events and links.
func checkJaegerTraces(t *testing.T, jc *jaegerClient, svc string, ids scenarioIDs) {
	var low, urgent, flaky taskTrace
	var okL, okU, okF bool
	var lastErr error
	var n int
	complete := func() bool {
		traces, err := jc.traces(svc)
		lastErr, n = err, len(traces)
		low, okL = findTask(traces, ids.low, 2)
		urgent, okU = findTask(traces, ids.urgent, 1)
		flaky, okF = findTask(traces, ids.flaky, 2)
		return okL && okU && okF
	}
	if !assert.Eventually(t, complete, 30*time.Second, 200*time.Millisecond) {
		t.Fatalf("Jaeger at %s never returned the scenario's traces for service %s (low %v, urgent %v, flaky %v; last error %v; %d traces)",
			jc.base, svc, okL, okU, okF, lastErr, n)
	}

	for _, tt := range []taskTrace{low, urgent, flaky} {
		typ := tt.enqueue.tag("overtake.task.type")
		require.Equal(t, svc, tt.trace.Processes[tt.enqueue.ProcessID].ServiceName)
		require.Equal(t, "enqueue jobs/"+typ, tt.enqueue.OperationName)
		require.Equal(t, "producer", tt.enqueue.tag("span.kind"))
		require.Equal(t, "overtake", tt.enqueue.tag("messaging.system"))
		require.Equal(t, "send", tt.enqueue.tag("messaging.operation.type"))
		for _, s := range tt.process {
			// One trace from the producer to every run.
			require.Equal(t, tt.enqueue.TraceID, s.TraceID)
			parent := s.refs("CHILD_OF")
			require.Len(t, parent, 1, "process span %s has the enqueue span as parent", s.SpanID)
			require.Equal(t, tt.enqueue.SpanID, parent[0].SpanID)
			require.Equal(t, "process jobs/"+typ, s.OperationName)
			require.Equal(t, "consumer", s.tag("span.kind"))
			require.Equal(t, "process", s.tag("messaging.operation.type"))
			require.Equal(t, "jobs", s.tag("messaging.destination.name"))
		}
	}

	// The victim's first run: preempted by the urgent task, checkpoint saved,
	// requeued.
	first, second := low.process[0], low.process[1]
	require.Equal(t, []string{"checkpoint.saved", "preempted", "checkpoint.saved", "requeued"}, first.eventNames())
	pre := first.event(t, "preempted")
	require.Equal(t, ids.urgent, pre["overtake.preempted.by"])
	require.Equal(t, "2", pre["overtake.preempted.by.level"])
	require.Equal(t, "5000", pre["overtake.grace_ms"])
	var seqs []string
	for _, e := range first.events() {
		if e["event"] == "checkpoint.saved" {
			seqs = append(seqs, e["overtake.checkpoint.seq"])
			n, err := strconv.Atoi(e["overtake.checkpoint.bytes"])
			require.NoError(t, err)
			require.Positive(t, n)
		}
	}
	require.Equal(t, []string{"1", "2"}, seqs)
	require.Equal(t, "preempted", first.event(t, "requeued")["overtake.reason"])
	require.Equal(t, "preempted", first.tag("overtake.outcome"))
	require.Empty(t, first.refs("FOLLOWS_FROM"))

	// The resumed run: a new span linked to the preempted one.
	require.Equal(t, []string{"resumed"}, second.eventNames())
	require.Equal(t, "2", second.event(t, "resumed")["overtake.checkpoint.seq"])
	require.Equal(t, "1", second.tag("overtake.preemptions_before"))
	require.Equal(t, []jaegerRef{{RefType: "FOLLOWS_FROM", TraceID: first.TraceID, SpanID: first.SpanID}}, second.refs("FOLLOWS_FROM"))
	require.Equal(t, "OK", second.tag("otel.status_code"))

	// The urgent run: preempted.victim, and a link into the victim's trace.
	u := urgent.process[0]
	require.NotEqual(t, low.trace.TraceID, urgent.trace.TraceID)
	vic := u.event(t, "preempted.victim")
	require.Equal(t, ids.low, vic["overtake.victim.id"])
	require.Equal(t, "0", vic["overtake.level"])
	require.Equal(t, []jaegerRef{{RefType: "FOLLOWS_FROM", TraceID: first.TraceID, SpanID: first.SpanID}}, u.refs("FOLLOWS_FROM"))

	// The retry: an error span with the exception and retry events, and a
	// second run linked to it.
	failed, retried := flaky.process[0], flaky.process[1]
	require.Equal(t, "ERROR", failed.tag("otel.status_code"))
	require.Equal(t, "flaky failure", failed.tag("otel.status_description"))
	require.Equal(t, "true", failed.tag("error"))
	require.Equal(t, []string{"exception", "retry"}, failed.eventNames())
	require.Equal(t, "1", failed.event(t, "retry")["overtake.attempt"])
	require.Equal(t, []jaegerRef{{RefType: "FOLLOWS_FROM", TraceID: failed.TraceID, SpanID: failed.SpanID}}, retried.refs("FOLLOWS_FROM"))
	require.Equal(t, "1", retried.tag("overtake.attempt"))

	t.Logf("Jaeger %s: service %s, victim trace %s, urgent trace %s (open %s/trace/%s)",
		jc.base, svc, low.trace.TraceID, urgent.trace.TraceID, jc.base, low.trace.TraceID)
}
