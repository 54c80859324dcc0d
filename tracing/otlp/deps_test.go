package otlp

import (
	"os/exec"
	"strings"
	"testing"
)

// The packages a producer or a worker imports link the OpenTelemetry API
// only: no SDK, no exporter, no gRPC. Only this package brings those in.
func TestLightPackagesLinkNoExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	pkgs := []string{"queue", "handlers", "checkpoint", "runtime", "preempt", "tracing"}
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, "github.com/overtake/overtake/"+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"google.golang.org/grpc", "go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "go.opentelemetry.io/proto"} {
			if strings.HasPrefix(dep, heavy) {
				t.Errorf("%v depend on %s", pkgs, dep)
			}
		}
	}
	// And this package does link the exporters (the test would pass
	// vacuously if go list printed nothing useful).
	own, err := exec.Command("go", "list", "-deps", "github.com/overtake/overtake/tracing/otlp").CombinedOutput()
	if err != nil || !strings.Contains(string(own), "google.golang.org/grpc") {
		t.Fatalf("tracing/otlp should link gRPC: %v\n%s", err, own)
	}
}
