package runtime_test

import (
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// testBundle is one runtime test's world (River's testBundle): a queue on
// the backend's namespace, and what observes the runtimes the test starts
// on it: an observed logger always, and with withTracing a recording
// tracer provider (the producer's too) and a manually read meter
// provider. setupBundle builds it; start starts a runtime in it.
type testBundle struct {
	q    *queue.Client
	log  *zap.Logger // to the test's log and to logs
	logs *observer.ObservedLogs
	// Set by withTracing, nil otherwise.
	tp     *sdktrace.TracerProvider
	rec    *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

// setupOption chooses what setupBundle builds.
type setupOption func(*setupConfig)

type setupConfig struct {
	queue  queue.Config
	traced bool
}

// withQueue sets the queue's Config (its Namespace is the backend's).
func withQueue(cfg queue.Config) setupOption { return func(c *setupConfig) { c.queue = cfg } }

// withTracing records the spans and metrics of the producer and of the
// runtimes, and names the queue "jobs" unless withQueue named it.
func withTracing() setupOption { return func(c *setupConfig) { c.traced = true } }

// setupBundle builds a test's world on backend b; the providers are shut
// down at cleanup, after the runtimes.
func setupBundle(t *testing.T, b testredis.Backend, opts ...setupOption) *testBundle {
	t.Helper()
	var c setupConfig
	for _, o := range opts {
		o(&c)
	}
	tb := &testBundle{}
	core, logs := observer.New(zapcore.DebugLevel)
	tb.log, tb.logs = zap.New(zapcore.NewTee(core, zaptest.NewLogger(t).Core())), logs
	cfg := c.queue
	cfg.Namespace = b.Prefix
	cfg.Shards = cmp.Or(cfg.Shards, testShards(t))
	if c.traced {
		tb.rec, tb.reader = tracetest.NewSpanRecorder(), sdkmetric.NewManualReader()
		tb.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tb.rec))
		tb.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tb.reader))
		t.Cleanup(func() {
			_ = tb.tp.Shutdown(context.Background())
			_ = tb.mp.Shutdown(context.Background())
		})
		if cfg.Name == "" {
			cfg.Name = "jobs"
		}
		cfg.TracerProvider = tb.tp
	}
	var err error
	tb.q, err = queue.New(b.Client, cfg)
	require.NoError(t, err)
	return tb
}

// start starts a runtime of the bundle, its logger and providers unless
// cfg names its own; it is shut down at cleanup, before the providers.
func (tb *testBundle) start(t *testing.T, ctx context.Context, h handlers.Handler, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = tb.log
	}
	if tb.tp != nil {
		cfg.TracerProvider, cfg.MeterProvider = tb.tp, tb.mp
	}
	rt, err := runtime.New(tb.q, h, cfg)
	require.NoError(t, err)
	require.NoError(t, rt.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	})
	return rt
}

// enqueue enqueues a task of type typ, no payload, at level.
func (tb *testBundle) enqueue(t *testing.T, typ string, level int, opts ...queue.Option) string {
	t.Helper()
	tk, err := tb.q.Enqueue(context.Background(), queue.NewTask(typ, nil), append([]queue.Option{queue.Level(level)}, opts...)...)
	require.NoError(t, err)
	return tk.ID
}
