package queue

import (
	"context"
	"fmt"
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testredis/sentinelproc"
	"github.com/overtake/overtake/internal/wire"
)

// BenchmarkWaitReplicas is the cost of WaitReplicas 1 beside the default,
// on a primary with one replica (loopback): concurrent Enqueues (grouped
// into script calls) and a task's sequential life (Enqueue, Lease, Ack).
// Compare the ns/op of wait=0 and wait=1 for the throughput ratio.
func BenchmarkWaitReplicas(b *testing.B) {
	s := testredis.StartSentinel(b, sentinelproc.Options{})
	rdb := s.NewClient(b, nil)
	for _, wait := range []int{0, 1} {
		b.Run(fmt.Sprintf("enqueue-parallel/wait=%d", wait), func(b *testing.B) {
			e := newEnvOn(b, rdb, fmt.Sprintf("bp%d", wait), func(c *Config) { c.WaitReplicas, c.Clock = wait, nil })
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := e.c.Enqueue(context.Background(), NewTask("t", nil)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run(fmt.Sprintf("enqueue-lease-ack/wait=%d", wait), func(b *testing.B) {
			e := newEnvOn(b, rdb, fmt.Sprintf("bs%d", wait), func(c *Config) { c.WaitReplicas, c.Clock = wait, nil })
			ctx := context.Background()
			for b.Loop() {
				if _, err := e.c.Enqueue(ctx, NewTask("t", nil)); err != nil {
					b.Fatal(err)
				}
				res, err := eng(e.c).Lease(ctx, wire.LeaseRequest{Worker: "w", Count: 1})
				if err != nil || len(res.Tasks) != 1 {
					b.Fatalf("lease: %v, %d tasks", err, len(res.Tasks))
				}
				if err := eng(e.c).Ack(ctx, res.Tasks[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
