package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// benchPending is how many tasks BenchmarkQueuePageMillion fills in.
const benchPending = 1_000_000

// BenchmarkQueuePageMillion renders the queue page, and a pending page
// half-way down a level, of a queue with a million pending tasks on a
// real redis-server (server time: the handler, without the network to the
// browser). The bound is 200 ms a page. Run it with
//
//	scripts/with-redis.sh go test -run '^$' -bench QueuePageMillion ./console/
//
// Filling the queue takes a while; `make test` does not run benchmarks.
func BenchmarkQueuePageMillion(b *testing.B) {
	var be *testredis.Backend
	for _, x := range testredis.Backends(b) {
		if !x.IsMini() {
			be = &x
		}
	}
	if be == nil {
		b.Skip("needs a real redis-server (install it, or set " + testredis.EnvRedisAddr + ")")
	}
	ctx := context.Background()
	q, err := queue.New(be.Client, queue.Config{Namespace: be.Prefix, Name: "big"})
	require.NoError(b, err)
	start := time.Now()
	const chunk = 10_000
	for n := 0; n < benchPending; n += chunk {
		tasks := make([]*queue.Task, chunk)
		for i := range tasks {
			tasks[i] = queue.NewTask("report", []byte(`{"tenant":42,"rows":1000}`))
		}
		_, err := q.EnqueueBatch(ctx, tasks, queue.Level(n*3/benchPending))
		require.NoError(b, err)
	}
	b.Logf("filled %d pending tasks in %v", benchPending, time.Since(start).Round(time.Millisecond))
	c, err := console.New(q, console.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { _ = c.Close() })

	for _, page := range []struct{ name, path string }{
		{"queue", "/"},
		{"pending-middle", "/pending?level=1&offset=166000"},
	} {
		b.Run(page.name, func(b *testing.B) {
			var worst time.Duration
			for b.Loop() {
				t0 := time.Now()
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, page.path, nil)
				req.Host = "localhost" // not httptest's example.com, which the console does not answer
				c.ServeHTTP(rec, req)
				worst = max(worst, time.Since(t0))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", page.path, rec.Code, rec.Body.String())
				}
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
			if worst > 200*time.Millisecond {
				b.Errorf("%s took %v at worst, over 200ms", page.path, worst)
			}
		})
	}
}
