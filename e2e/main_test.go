package e2e_test

import (
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testredis.Main(m,
		// ants starts a package-level default pool at init; it is not ours.
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
		// otlptracehttp sends through a package-level http.Transport whose
		// keep-alive connection to Jaeger outlives the exporter's Shutdown
		// (until its 90 s idle timeout); nothing outside the exporter can
		// close it. Our own HTTP client does not keep connections alive.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}
