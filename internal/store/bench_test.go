package store

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// benchClient is a queue on a fresh miniredis (the throughput table on a
// real Redis lives with the load tests).
func benchClient(b *testing.B) *Store {
	b.Helper()
	m := miniredis.RunT(b)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	c, err := New(rdb, Config{Namespace: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

var benchPayload = make([]byte, 256)

func BenchmarkEnqueue(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	task := NewTask("bench", benchPayload)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Enqueue(ctx, task, Level(1)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnqueueBatch100(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	tasks := make([]*Task, 100)
	for i := range tasks {
		tasks[i] = NewTask("bench", benchPayload)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.EnqueueBatch(ctx, tasks, Level(1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tasks)), "ns/task")
}

// BenchmarkLeaseAck measures one lease and one ack of a pending task; the
// queue is refilled outside the timer.
func BenchmarkLeaseAck(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	refill := make([]*Task, 1000)
	for i := range refill {
		refill[i] = NewTask("bench", benchPayload)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%len(refill) == 0 {
			b.StopTimer()
			if _, err := c.EnqueueBatch(ctx, refill, Level(i/len(refill)%3)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		res, err := c.Lease(ctx, LeaseRequest{Worker: "w"})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Tasks) != 1 {
			b.Fatalf("leased %d tasks", len(res.Tasks))
		}
		if err := c.Ack(ctx, res.Tasks[0]); err != nil {
			b.Fatal(err)
		}
	}
}
