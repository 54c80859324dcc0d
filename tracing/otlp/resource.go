package otlp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/overtake/overtake/internal/telemetry"
)

// WithServiceInstanceID sets the service.instance.id resource attribute,
// e.g. to a runtime.Config.WorkerID chosen before Setup. Without it Setup
// makes one up (see [Providers.InstanceID]); OTEL_RESOURCE_ATTRIBUTES,
// when it sets service.instance.id, takes precedence.
func WithServiceInstanceID(id string) Option {
	return optionFunc(func(c *config) { c.instanceID = id })
}

// newResource describes the process: the SDK defaults (telemetry.sdk.*, a
// fallback service.name), the host and process detectors, our defaults
// (service.version, service.instance.id), our options, then
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, later ones winning.
func newResource(ctx context.Context, c *config) (*resource.Resource, error) {
	detected := detectResource(ctx)
	defaults := []attribute.KeyValue{semconv.ServiceInstanceID(defaultInstanceID())}
	if v := telemetry.MainVersion(); v != "" {
		defaults = append(defaults, semconv.ServiceVersion(v))
	}
	attrs := append([]attribute.KeyValue(nil), c.attrs...)
	if c.serviceName != "" {
		attrs = append(attrs, semconv.ServiceName(c.serviceName))
	}
	if c.serviceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(c.serviceVersion))
	}
	if c.instanceID != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(c.instanceID))
	}
	ours, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(defaults...),
		resource.WithAttributes(attrs...),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, err
	}
	base, err := resource.Merge(resource.Default(), detected)
	if err != nil {
		return nil, err
	}
	return resource.Merge(base, ours)
}

// detectResource runs the SDK's host and process detectors. It is best
// effort: a detector that fails (a container without a machine ID has no
// host.id) leaves its attributes out and the others in. The command line
// is left out, since it can hold credentials (a Redis URL with a password).
func detectResource(ctx context.Context) *resource.Resource {
	r, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithHost(),
		resource.WithHostID(),
		resource.WithProcessPID(),
		resource.WithProcessExecutableName(),
		resource.WithProcessExecutablePath(),
		resource.WithProcessOwner(),
		resource.WithProcessRuntimeName(),
		resource.WithProcessRuntimeVersion(),
		resource.WithProcessRuntimeDescription(),
	)
	if r == nil || err != nil && r.Len() == 0 {
		return resource.Empty()
	}
	return r
}

// defaultInstanceID names this process "<host>-<pid>-<6 random hex
// digits>", the form of the runtime's default worker ID.
func defaultInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}
