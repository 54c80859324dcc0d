package telemetry_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/overtake/overtake/internal/telemetry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
)

// The producer stores its span's context in the task headers; the worker
// continues the same trace from them.
func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := telemetry.Tracer(tp)
	info := telemetry.TaskInfo{Queue: "default", ID: "t1", Type: "report", Level: 0}

	ctx, enq := telemetry.StartEnqueue(context.Background(), tr, info)
	headers := telemetry.Inject(ctx, nil) // task.Headers
	enq.End()

	_, proc := telemetry.StartProcess(context.Background(), tr, info, headers)
	telemetry.AddPreempted(proc, "t2", 2, 5*time.Second)
	telemetry.AddCheckpointSaved(proc, 128, 1)
	telemetry.AddRequeued(proc, "preempted")
	proc.End()

	for _, s := range rec.Ended() {
		var names []string
		for _, e := range s.Events() {
			names = append(names, e.Name)
		}
		fmt.Println(s.Name(), s.SpanKind(), s.SpanContext().TraceID() == enq.SpanContext().TraceID(), names)
	}
	// Output:
	// enqueue default/report producer true []
	// process default/report consumer true [preempted checkpoint.saved requeued]
}

func ExampleNewMetrics() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	m, err := telemetry.NewMetrics(mp)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	high := telemetry.Labels{Queue: "default", Level: 2, LevelName: "high"}
	m.RecordWait(ctx, high, 40*time.Millisecond)
	m.RecordRun(ctx, high, 2*time.Second, telemetry.RunSucceeded)
	m.RecordCheckpoint(ctx, high, 512)

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(ctx, &rm)
	var lines []string
	for _, metric := range rm.ScopeMetrics[0].Metrics {
		lines = append(lines, metric.Name+" "+metric.Unit)
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// overtake.checkpoint.size By
	// overtake.task.processed {task}
	// overtake.task.run.duration s
	// overtake.task.wait.duration s
}

func ExampleTaskFields() {
	logger := zap.NewExample()
	logger.Info("leased", telemetry.TaskFields("t1", "email", 2)...)
	// Output: {"level":"info","msg":"leased","task_id":"t1","task_type":"email","task_level":2}
}
