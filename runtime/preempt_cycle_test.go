package runtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/require"
)

// A task preempted and resumed over and over on one worker stays tracked:
// when its requeued task is leased again before the old run's bookkeeping
// ends, the new run must keep its heartbeat (its lease never expires) and
// the task never runs twice at once.
func TestPreemptResumeCyclesKeepLease(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{LeaseDuration: time.Second})
		var mu sync.Mutex
		running := 0
		double := make(chan struct{}, 1)
		lowStarted := make(chan struct{}, 8)
		urgentRan := make(chan struct{}, 8)
		mux := handlers.NewMux()
		mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
			mu.Lock()
			running++
			if running > 1 {
				select {
				case double <- struct{}{}:
				default:
				}
			}
			mu.Unlock()
			lowStarted <- struct{}{}
			<-ctx.Done()
			mu.Lock()
			running--
			mu.Unlock()
			return context.Cause(ctx)
		})
		mux.HandleFunc("urgent", func(context.Context, *queue.TaskInfo) error {
			urgentRan <- struct{}{}
			return nil
		})
		rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, HeartbeatInterval: 300 * time.Millisecond,
			Preemption: preempt.Policy{MaxPreemptions: preempt.Unlimited}})
		lowID := enqueue(t, q, "low", "", 0)
		receive(t, lowStarted, "low start")
		const cycles = 60
		for i := 0; i < cycles; i++ {
			enqueue(t, q, "urgent", "", 2)
			receive(t, urgentRan, "urgent run")
			receive(t, lowStarted, "low resume")
			select {
			case <-double:
				t.Fatalf("cycle %d: the low task runs twice at once", i)
			default:
			}
		}
		require.EqualValues(t, cycles, rt.Stats().Preempted)
		tk, err := store.Of(q).Inspect(context.Background(), lowID)
		require.NoError(t, err)
		token := tk.Token
		// Over more than a lease duration, the running task keeps its lease.
		require.Never(t, func() bool {
			cur, err := store.Of(q).Inspect(context.Background(), lowID)
			return err != nil || cur.State != store.StateActive || cur.Token != token
		}, 1500*time.Millisecond, 50*time.Millisecond, "the resumed run lost its lease")
	})
}
