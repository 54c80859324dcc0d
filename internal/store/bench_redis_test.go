package store

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/testredis"
)

// scriptMicros reads what Redis spent in scripts so far (see
// testredis.ScriptMicros).
func scriptMicros(b *testing.B, rdb *redis.Client) float64 {
	return float64(stat(b, rdb, testredis.ScriptMicros))
}

// stat reads a server figure with read (testredis.ServerCPU,
// ScriptCalls, ...), failing the benchmark if it cannot.
func stat[T any](b *testing.B, rdb *redis.Client, read func(context.Context, redis.UniversalClient) (T, error)) T {
	b.Helper()
	v, err := read(context.Background(), rdb)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkScriptsOnRedis reports Redis's own time in the scripts per task
// (redis-µs/task) on a real redis-server: the yardstick for work on the
// Lua, free of the client's and the network's share (which ns/op
// includes). Each sub-benchmark runs on a fresh server.
//
//	enqueue4: a grouped call of 4 Enqueues at 3 levels (16 producers
//	share calls of about 4)
//	lease20+ack20: a lease call of 20 tasks carrying the acks of the
//	previous call's 20 (a worker at concurrency 64 under load)
func BenchmarkScriptsOnRedis(b *testing.B) {
	b.Run("enqueue4", func(b *testing.B) {
		c, rdb := benchRedisClient(b)
		ctx := context.Background()
		before := scriptMicros(b, rdb)
		for b.Loop() {
			batch := make([]*enqWait, 4)
			for i := range batch {
				w, err := c.prepare(ctx, NewTask("bench", nil), []Option{Level(i % 3)})
				if err != nil {
					b.Fatal(err)
				}
				batch[i] = w
			}
			for _, err := range c.enqueueMany(ctx, batch) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric((scriptMicros(b, rdb)-before)/float64(b.N*4), "redis-µs/task")
	})
	b.Run("lease20+ack20", func(b *testing.B) {
		const per = 20
		c, rdb := benchRedisClient(b)
		ctx := context.Background()
		fill := func(n int) {
			for n > 0 {
				k := min(n, 1000)
				tasks := make([]*Task, k)
				for i := range tasks {
					tasks[i] = NewTask("bench", nil)
				}
				if _, err := c.EnqueueBatch(ctx, tasks, Level(n%3)); err != nil {
					b.Fatal(err)
				}
				n -= k
			}
		}
		fill(per * (b.N + 1))
		var prev []*Task
		before := scriptMicros(b, rdb)
		b.ResetTimer()
		for range b.N {
			for _, t := range prev {
				c.carried.queue(finishOp{t: t, mode: "ack"})
			}
			res, _, err := c.lease(ctx, LeaseRequest{Worker: "w", Count: per}, nil)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Tasks) != per {
				b.Fatalf("leased %d, want %d", len(res.Tasks), per)
			}
			prev = res.Tasks
		}
		b.StopTimer()
		b.ReportMetric((scriptMicros(b, rdb)-before)/float64(b.N*per), "redis-µs/task")
	})
}

// BenchmarkEnqueueOnRedis is single Enqueues from 2, 8, 16 (bench/peers'
// enqueue figure) and 32 goroutines on a real redis-server, one task an
// op, at 3 levels: what the client spends per task (client-µs/task: this
// process's user and system CPU, go-redis and the network calls
// included), what Redis spends in the scripts (redis-µs/task) and in all
// (server-µs/task: redis-server's CPU, the network and the event loop
// included), and the script calls a task took (calls/task: how well
// concurrent Enqueues share calls). All but the last are CPU times, so
// they move less with the machine's load than the throughput does.
func BenchmarkEnqueueOnRedis(b *testing.B) {
	for _, producers := range []int{2, 8, 16, 32} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			c, rdb := benchRedisClient(b)
			ctx := context.Background()
			var level atomic.Int64
			before, cpu := scriptMicros(b, rdb), processCPU()
			server, calls := stat(b, rdb, testredis.ServerCPU), stat(b, rdb, testredis.ScriptCalls)
			b.SetParallelism(max(producers/runtime.GOMAXPROCS(0), 1))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Enqueue(ctx, NewTask("bench", nil), Level(int(level.Add(1)%3))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu)/1e3/float64(b.N), "client-µs/task")
			b.ReportMetric((scriptMicros(b, rdb)-before)/float64(b.N), "redis-µs/task")
			b.ReportMetric(float64(stat(b, rdb, testredis.ServerCPU)-server)/1e3/float64(b.N), "server-µs/task")
			b.ReportMetric(float64(stat(b, rdb, testredis.ScriptCalls)-calls)/float64(b.N), "calls/task")
		})
	}
}

// processCPU is the user plus system CPU time this process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRedisClient is a queue on a fresh real redis-server (skipped
// without one), and a client of that server.
func benchRedisClient(b *testing.B) (*Store, *redis.Client) {
	b.Helper()
	srv := testredis.StartServer(b, testredis.ServerOptions{})
	rdb := srv.NewClient(b)
	c, err := New(rdb, Config{Namespace: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return c, rdb
}
