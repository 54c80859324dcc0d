package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/overtake/overtake/tracing/otlp"
)

// demoTelemetry is the demo's tracer and meter providers and logger. The
// tracer provider always carries the span processor that prints "taken"
// lines; with --otlp it also exports to the collector.
type demoTelemetry struct {
	tp         *sdktrace.TracerProvider
	mp         metric.MeterProvider
	log        *zap.Logger
	taken      *takenPrinter
	target     string       // the collector, with --otlp
	instanceID string       // service.instance.id, with --otlp: the worker ID
	shutdown   func() error // idempotent
}

func newTelemetry(ctx context.Context, o demoOptions, p *printer, errOut io.Writer) (*demoTelemetry, error) {
	tel := &demoTelemetry{log: zap.NewNop(), mp: metricnoop.NewMeterProvider()}
	if o.Verbose {
		enc := zap.NewDevelopmentEncoderConfig()
		core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(errOut), zapcore.InfoLevel)
		tel.log = zap.New(core)
	}
	taken := newTakenPrinter(p)
	tel.taken = taken
	if o.OTLP == "" {
		tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(taken))
		tel.shutdown = sync.OnceValue(func() error { return tel.tp.Shutdown(context.Background()) })
		return tel, nil
	}

	opts := []otlp.Option{otlp.WithServiceName("overtake-demo")}
	if !o.OTLPMetrics {
		opts = append(opts, otlp.WithoutMetrics())
	}
	tel.target = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if o.OTLP != "env" {
		opts = append(opts, otlp.WithEndpoint(o.OTLP), otlp.WithInsecure())
		tel.target = o.OTLP
	}
	if o.OTLPProtocol == "grpc" {
		opts = append(opts, otlp.WithProtocol(otlp.ProtocolGRPC))
	} else {
		opts = append(opts, otlp.WithProtocol(otlp.ProtocolHTTP))
	}
	prov, err := otlp.Setup(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("--otlp %s: %w", mask(o.OTLP), err)
	}
	sdk, ok := prov.TracerProvider.(*sdktrace.TracerProvider)
	if !ok {
		_ = prov.Shutdown(context.Background())
		return nil, errors.New("--otlp: otlp.Setup returned no SDK tracer provider")
	}
	sdk.RegisterSpanProcessor(taken)
	tel.tp, tel.mp, tel.instanceID = sdk, prov.MeterProvider, prov.InstanceID
	tel.shutdown = sync.OnceValue(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := prov.Shutdown(ctx); err != nil {
			return fmt.Errorf("could not send telemetry to %s: %v", mask(tel.target), err)
		}
		return nil
	})
	return tel, nil
}
