package otlp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/overtake/overtake/tracing/otlp"
)

// Setup exports over OTLP; Shutdown flushes what is still batched.
func ExampleSetup() {
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
	}))
	defer collector.Close()

	ctx := context.Background()
	p, err := otlp.Setup(ctx,
		otlp.WithServiceName("example-worker"),
		otlp.WithProtocol(otlp.ProtocolHTTP),
		otlp.WithEndpoint(strings.TrimPrefix(collector.URL, "http://")),
		otlp.WithInsecure(),
		otlp.WithoutMetrics())
	if err != nil {
		panic(err)
	}
	_, span := p.TracerProvider.Tracer("billing").Start(ctx, "work")
	span.End()

	shutdownCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fmt.Println(p.Shutdown(shutdownCtx), posts.Load())
	// Output: <nil> 1
}
