package otlp

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Protocol is the OTLP transport.
type Protocol string

// The OTLP protocols, spelled as in OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	// ProtocolGRPC exports over gRPC, port 4317 by default.
	ProtocolGRPC Protocol = "grpc"
	// ProtocolHTTP exports protobuf over HTTP, port 4318 by default.
	ProtocolHTTP Protocol = "http/protobuf"
)

// Option configures [Setup].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	protocol       Protocol
	endpoint       string
	insecure       bool
	serviceName    string
	serviceVersion string
	instanceID     string
	attrs          []attribute.KeyValue
	sampler        sdktrace.Sampler
	propagator     propagation.TextMapPropagator
	noMetrics      bool
	global         bool
	// transport carries the OTLP/HTTP exports; Shutdown closes its idle
	// connections so no keep-alive goroutine outlives the providers.
	transport *http.Transport
}

// WithProtocol selects the OTLP transport for traces and metrics. Without
// it the per-signal OTEL_EXPORTER_OTLP_{TRACES,METRICS}_PROTOCOL, then
// OTEL_EXPORTER_OTLP_PROTOCOL decide; defaults to [ProtocolHTTP] as the
// OpenTelemetry specification says. "http/json" selects HTTP.
func WithProtocol(p Protocol) Option {
	return optionFunc(func(c *config) { c.protocol = p })
}

// WithEndpoint sets the collector's host:port ("127.0.0.1:4317") for both
// signals. Without it the exporters read OTEL_EXPORTER_OTLP_ENDPOINT and
// OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT themselves, defaulting to
// localhost:4317 (gRPC) or localhost:4318 (HTTP).
func WithEndpoint(hostport string) Option {
	return optionFunc(func(c *config) { c.endpoint = hostport })
}

// WithInsecure disables TLS towards the collector.
func WithInsecure() Option {
	return optionFunc(func(c *config) { c.insecure = true })
}

// WithServiceName sets the service.name resource attribute.
// OTEL_SERVICE_NAME, when set, takes precedence. Defaults to the SDK's
// "unknown_service:<executable>".
func WithServiceName(name string) Option {
	return optionFunc(func(c *config) { c.serviceName = name })
}

// WithServiceVersion sets the service.version resource attribute, which
// defaults to the main module's version from the build info
// (the main module's version from its build info). OTEL_RESOURCE_ATTRIBUTES, when it sets
// service.version, takes precedence.
func WithServiceVersion(version string) Option {
	return optionFunc(func(c *config) { c.serviceVersion = version })
}

// WithResourceAttributes adds attributes to the resource.
// OTEL_RESOURCE_ATTRIBUTES, when set, takes precedence.
func WithResourceAttributes(attrs ...attribute.KeyValue) Option {
	return optionFunc(func(c *config) { c.attrs = append(c.attrs, attrs...) })
}

// WithSampler sets the trace sampler. Without it the SDK reads
// OTEL_TRACES_SAMPLER, defaulting to parent-based always-on.
func WithSampler(s sdktrace.Sampler) Option {
	return optionFunc(func(c *config) { c.sampler = s })
}

// WithPropagator sets the propagator of [Providers.Propagator] (and of the
// otel global with [WithGlobal]). Defaults to W3C TraceContext plus W3C Baggage.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.propagator = p })
}

// WithoutMetrics builds no meter provider and no metric exporter;
// [Providers.MeterProvider] is then a no-op provider.
func WithoutMetrics() Option {
	return optionFunc(func(c *config) { c.noMetrics = true })
}

// WithGlobal also installs the providers and the propagator as the otel
// globals. Without it Setup changes no global state.
func WithGlobal() Option {
	return optionFunc(func(c *config) { c.global = true })
}

// resolveProtocol picks the protocol of one signal ("TRACES" or
// "METRICS"): the option, then the signal's variable, then the general
// one, then HTTP.
func resolveProtocol(opt Protocol, signal string) (Protocol, error) {
	v := string(opt)
	if v == "" {
		v = os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	}
	if v == "" {
		v = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "http/protobuf", "http/json":
		return ProtocolHTTP, nil
	case "grpc":
		return ProtocolGRPC, nil
	default:
		return "", fmt.Errorf("tracing: unknown OTLP protocol %q", v)
	}
}
