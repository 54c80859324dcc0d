package runtime_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testredis/sentinelproc"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// BenchmarkWaitReplicasRuntime is the cost of queue.Config.WaitReplicas 1
// end to end, on a primary with one replica (loopback): b.N tasks enqueued
// in batches of 500, then run by one runtime of 16 slots with an empty
// handler, every call of both (enqueue, lease, heartbeat, ack) followed by
// WAIT when on. ns/op is per task; wait=0 against wait=1 is the
// throughput ratio.
func BenchmarkWaitReplicasRuntime(b *testing.B) {
	s := testredis.StartSentinel(b, sentinelproc.Options{})
	rdb := s.NewClient(b, nil)
	run := 0
	for _, wait := range []int{0, 1} {
		b.Run(fmt.Sprintf("wait=%d", wait), func(b *testing.B) {
			run++
			q, err := queue.New(rdb, queue.Config{Namespace: fmt.Sprintf("rb%d", run), WaitReplicas: wait})
			if err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			all := make(chan struct{})
			mux := handlers.NewMux()
			mux.HandleFunc("t", func(context.Context, *queue.TaskInfo) error {
				if n.Add(1) == int64(b.N) {
					close(all)
				}
				return nil
			})
			ctx := context.Background()
			for i := 0; i < b.N; i += 500 {
				batch := make([]*queue.Task, min(500, b.N-i))
				for j := range batch {
					batch[j] = queue.NewTask("t", nil)
				}
				if _, err := q.EnqueueBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 16, Logger: zap.NewNop()})
			if err != nil {
				b.Fatal(err)
			}
			if err := rt.Start(ctx); err != nil {
				b.Fatal(err)
			}
			select {
			case <-all:
			case <-time.After(5 * time.Minute):
				b.Errorf("%d of %d tasks ran", n.Load(), b.N)
			}
			b.StopTimer()
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := rt.Shutdown(sctx); err != nil {
				b.Error(err)
			}
		})
	}
}
