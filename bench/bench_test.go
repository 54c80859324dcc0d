package bench_test

import (
	"github.com/overtake/overtake/internal/ckpt"
	"github.com/overtake/overtake/internal/mirror"

	"github.com/overtake/overtake/internal/store"

	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	otrt "github.com/overtake/overtake/runtime"
)

// forEach runs fn as a sub-benchmark per backend, with a queue client of
// its own namespace.
func forEach(b *testing.B, fn func(b *testing.B, q *queue.Client)) {
	for _, be := range testredis.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			q, err := queue.New(be.Client, queue.Config{Namespace: be.Prefix, Name: b.Name()})
			if err != nil {
				b.Fatal(err)
			}
			fn(b, q)
		})
	}
}

// fill enqueues n no-op tasks over 3 levels in batches of 1000.
func fill(b *testing.B, q *queue.Client, n int) {
	b.Helper()
	for i := 0; i < n; i += 1000 {
		tasks := make([]*queue.Task, 0, 1000)
		for j := i; j < min(i+1000, n); j++ {
			tasks = append(tasks, queue.NewTask("noop", nil, queue.Level(j%3)))
		}
		if _, err := q.EnqueueBatch(context.Background(), tasks); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnqueue is one Enqueue: one script round trip.
func BenchmarkEnqueue(b *testing.B) {
	forEach(b, func(b *testing.B, q *queue.Client) {
		ctx := context.Background()
		payload := []byte(`{"user":42,"op":"resize"}`)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := q.Enqueue(ctx, queue.NewTask("noop", payload), queue.Level(i%3)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkEnqueueBatch100 is one EnqueueBatch of 100 tasks: one pipeline.
func BenchmarkEnqueueBatch100(b *testing.B) {
	forEach(b, func(b *testing.B, q *queue.Client) {
		ctx := context.Background()
		tasks := make([]*queue.Task, 100)
		b.ReportAllocs()
		for b.Loop() {
			for i := range tasks {
				tasks[i] = queue.NewTask("noop", nil)
			}
			if _, err := q.EnqueueBatch(ctx, tasks); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tasks)), "ns/task")
	})
}

// BenchmarkLeaseAck leases one task and acks it: two script round trips,
// the cost of a task to a worker that finds work waiting.
func BenchmarkLeaseAck(b *testing.B) {
	forEach(b, func(b *testing.B, q *queue.Client) {
		ctx := context.Background()
		fill(b, q, b.N)
		req := store.LeaseRequest{Worker: "bench", Count: 1}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			res, err := store.Of(q).Lease(ctx, req)
			if err != nil || len(res.Tasks) != 1 {
				b.Fatalf("lease: %d tasks, %v", len(res.Tasks), err)
			}
			if err := store.Of(q).Ack(ctx, res.Tasks[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSaveCheckpoint1KiB saves a 1 KiB checkpoint through the Handle a
// handler uses: one fenced script round trip.
func BenchmarkSaveCheckpoint1KiB(b *testing.B) {
	forEach(b, func(b *testing.B, q *queue.Client) {
		ctx := context.Background()
		fill(b, q, 1)
		res, err := store.Of(q).Lease(ctx, store.LeaseRequest{Worker: "bench"})
		if err != nil || len(res.Tasks) != 1 {
			b.Fatalf("lease: %v", err)
		}
		h := ckpt.New(store.Of(q), mirror.TaskInfo(&res.Tasks[0].Info), res.Tasks[0].Token)
		data := make([]byte, 1024)
		b.ReportAllocs()
		for b.Loop() {
			if err := h.Save(ctx, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWakeLatency is the time from Enqueue returning to the handler
// starting on an idle runtime (Pub/Sub wake-up, one lease). It reports
// p50-ns and p99-ns.
func BenchmarkWakeLatency(b *testing.B) {
	forEach(b, func(b *testing.B, q *queue.Client) {
		ctx := context.Background()
		started := make(chan time.Time, 1)
		h := handlers.HandlerFunc(func(context.Context, *queue.TaskInfo) error {
			started <- time.Now()
			return nil
		})
		rt, err := otrt.New(q, h, otrt.Config{Concurrency: 4, Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		if err := rt.Start(ctx); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_ = rt.Shutdown(sctx)
		})
		var lat []time.Duration
		b.ReportAllocs()
		for b.Loop() {
			if _, err := q.Enqueue(ctx, queue.NewTask("ping", nil)); err != nil {
				b.Fatal(err)
			}
			ret := time.Now()
			select {
			case at := <-started:
				lat = append(lat, max(at.Sub(ret), 0))
			case <-time.After(5 * time.Second):
				b.Fatal("handler did not start within 5s")
			}
		}
		slices.Sort(lat)
		pct := func(p float64) float64 { return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)]) }
		b.ReportMetric(pct(0.50), "p50-ns")
		b.ReportMetric(pct(0.99), "p99-ns")
	})
}
