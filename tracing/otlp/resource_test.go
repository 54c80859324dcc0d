package otlp

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/overtake/overtake/internal/telemetry"
)

// resourceOf returns the attributes of the resource Setup builds from opts,
// as strings.
func resourceOf(t *testing.T, opts ...Option) (map[attribute.Key]string, *Providers) {
	t.Helper()
	c := newFakeCollector(t)
	p, err := Setup(context.Background(), append([]Option{WithEndpoint(c.hostport()), WithInsecure(),
		WithProtocol(ProtocolHTTP), WithoutMetrics()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return resourceMap(p.Resource), p
}

func resourceMap(r *resource.Resource) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range r.Attributes() {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

// The resource names the host (Jaeger's clock-skew adjuster needs it), the
// process, the service's version and instance; never the command line.
func TestSetupResourceDetected(t *testing.T) {
	clearOTELEnv(t)
	res, p := resourceOf(t, WithServiceName("worker"))
	host, _ := os.Hostname()
	exe, _ := os.Executable()
	for k, want := range map[attribute.Key]string{
		"service.name":            "worker",
		"service.version":         telemetry.MainVersion(),
		"host.name":               host,
		"process.pid":             strconv.Itoa(os.Getpid()),
		"process.executable.path": exe,
		"process.runtime.name":    "go",
		"telemetry.sdk.language":  "go",
	} {
		if res[k] != want || want == "" {
			t.Errorf("%s = %q, want %q", k, res[k], want)
		}
	}
	if _, ok := res["process.command_args"]; ok {
		t.Error("the resource holds the command line")
	}
	prefix := host + "-" + strconv.Itoa(os.Getpid()) + "-"
	id := res["service.instance.id"]
	if !strings.HasPrefix(id, prefix) || len(id) != len(prefix)+6 || p.InstanceID != id {
		t.Errorf("service.instance.id %q (InstanceID %q), want %s<6 hex digits>", id, p.InstanceID, prefix)
	}
	if other, _ := resourceOf(t); other["service.instance.id"] == id {
		t.Error("two Setups made the same instance ID")
	}
}

// Options set the service's version and instance; OTEL_RESOURCE_ATTRIBUTES
// wins over them, and over a detected attribute.
func TestSetupResourceOptionsAndEnv(t *testing.T) {
	clearOTELEnv(t)
	res, p := resourceOf(t, WithServiceVersion("1.2.3"), WithServiceInstanceID("worker-7"))
	if res["service.version"] != "1.2.3" || res["service.instance.id"] != "worker-7" || p.InstanceID != "worker-7" {
		t.Errorf("version %q, instance %q (%q)", res["service.version"], res["service.instance.id"], p.InstanceID)
	}
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "host.name=box-1,service.instance.id=from-env,deployment.environment.name=test")
	res, p = resourceOf(t, WithServiceInstanceID("worker-7"))
	for k, want := range map[attribute.Key]string{
		"host.name": "box-1", "service.instance.id": "from-env", "deployment.environment.name": "test",
	} {
		if res[k] != want {
			t.Errorf("%s = %q, want %q", k, res[k], want)
		}
	}
	if p.InstanceID != "from-env" {
		t.Errorf("InstanceID %q, want from-env", p.InstanceID)
	}
}

// A malformed OTEL_RESOURCE_ATTRIBUTES is still an error.
func TestSetupResourceBadEnv(t *testing.T) {
	clearOTELEnv(t)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "no-equals-sign")
	if _, err := Setup(context.Background(), WithoutMetrics(), WithInsecure(), WithEndpoint("127.0.0.1:1")); err == nil {
		t.Error("Setup accepted a malformed OTEL_RESOURCE_ATTRIBUTES")
	}
}
