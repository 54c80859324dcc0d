package runtime_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// inversionWindow is the grace of the definition of a priority inversion
// (issue 31): a task of level L leased at t is an inversion when a task of
// a higher level had been pending, in any shard, since before t − 10ms
// (its Enqueue had returned) and was still pending at t.
const inversionWindow = 10 * time.Millisecond

// TestShardedStrictOrder is the property test of a sharded queue's order
// on a real three-master Redis Cluster, for 3 and 6 shards: producers
// enqueue levels unevenly over the shards (the top level mostly in one
// shard, the middle in another, the low level in the rest) faster than two
// runtimes drain them, so a backlog builds at every level and urgent
// tasks preempt running low ones; it counts the inversions over every
// lease of every task (first leases and resumed runs alike): zero.
func TestShardedStrictOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Redis Cluster")
	}
	cl := testredis.StartCluster(t)
	for _, shards := range []int{3, 6} {
		t.Run(fmt.Sprint("shards=", shards), func(t *testing.T) { shardedOrder(t, cl, shards) })
	}
}

// lease is one lease of a task as its handler saw it.
type lease struct {
	id    string
	level int
	at    time.Time
}

func shardedOrder(t *testing.T, cl *testredis.Cluster, shards int) {
	const (
		producers, perProducer = 3, 300
		workers, conc          = 2, 4
		work                   = 15 * time.Millisecond
	)
	var b [4]byte
	_, _ = rand.Read(b[:])
	qcfg := queue.Config{Namespace: "so" + hex.EncodeToString(b[:]), Name: "order", Shards: shards}
	newQ := func() *queue.Client {
		q, err := queue.New(cl.NewClient(t), qcfg)
		require.NoError(t, err)
		return q
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var leases []lease
	enqueued := map[string]time.Time{} // when each task's Enqueue returned
	levelOf := map[string]int{}
	done := map[string]bool{}
	progress := make(chan int, producers*perProducer*2)
	h := handlers.HandlerFunc(func(ctx context.Context, tk *queue.TaskInfo) error {
		mu.Lock()
		leases = append(leases, lease{tk.ID, tk.Level, tk.LeasedAt})
		mu.Unlock()
		select {
		case <-ctx.Done(): // preempted: back to its level, resumed later
			return ctx.Err()
		case <-time.After(work): // the task's work
		}
		mu.Lock()
		done[tk.ID] = true
		n := len(done)
		mu.Unlock()
		progress <- n
		return nil
	})
	var rts []*runtime.Runtime
	for i := range workers {
		rts = append(rts, startRuntime(t, newQ(), h, runtime.Config{
			WorkerID: fmt.Sprintf("order-%d-%d", shards, i), Concurrency: conc, PollInterval: fastPoll}))
	}

	// shardFor spreads levels unevenly: the top level 80% in shard 0, the
	// middle 80% in shard 1, the low level over the others.
	shardFor := func(level int) int {
		if mrand.IntN(5) == 0 {
			return mrand.IntN(shards)
		}
		switch level {
		case 2:
			return 0
		case 1:
			return 1
		}
		return 2 + mrand.IntN(shards-2)
	}
	var wg sync.WaitGroup
	for p := range producers {
		q := newQ()
		wg.Go(func() {
			for i := range perProducer {
				level := []int{0, 0, 0, 1, 1, 2}[mrand.IntN(6)]
				k := shardFor(level)
				id := ""
				for n := 0; id == "" || store.ShardOf(id, shards) != k; n++ {
					id = fmt.Sprintf("p%d-%d-%d", p, i, n)
				}
				_, err := q.Enqueue(ctx, queue.NewTask("t", nil), queue.Level(level), queue.ID(id))
				at := time.Now()
				if !assertNoErr(t, err) {
					return
				}
				mu.Lock()
				enqueued[id], levelOf[id] = at, level
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total := producers * perProducer
	deadline := time.After(2 * time.Minute)
	for n := 0; n < total; {
		select {
		case n = <-progress:
		case <-deadline:
			t.Fatalf("%d of %d tasks done after 2 minutes", n, total)
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	for _, rt := range rts {
		_ = rt.Shutdown(sctx)
	}
	scancel()

	mu.Lock()
	defer mu.Unlock()
	first := map[string]time.Time{}
	for _, l := range leases {
		if f, ok := first[l.id]; !ok || l.at.Before(f) {
			first[l.id] = l.at
		}
	}
	// Tasks by level, for the scan below.
	byLevel := map[int][]string{}
	for id, l := range levelOf {
		byLevel[l] = append(byLevel[l], id)
	}
	inversions, resumed := 0, len(leases)-len(first)
	var sample []string
	for _, l := range leases {
		for hl := l.level + 1; hl <= 2; hl++ {
			for _, id := range byLevel[hl] {
				if enqueued[id].Before(l.at.Add(-inversionWindow)) && first[id].After(l.at) {
					inversions++
					if len(sample) < 5 {
						sample = append(sample, fmt.Sprintf("%s (level %d) leased at %s while %s (level %d) pending since %s, leased at %s",
							l.id, l.level, l.at.Format("15:04:05.000"), id, hl, enqueued[id].Format("15:04:05.000"),
							first[id].Format("15:04:05.000")))
					}
				}
			}
		}
	}
	perLevel := map[int]int{}
	for _, l := range leases {
		perLevel[l.level]++
	}
	keys := make([]int, 0, len(perLevel))
	for l := range perLevel {
		keys = append(keys, l)
	}
	sort.Ints(keys)
	t.Logf("shards %d: %d tasks, %d leases (%d resumed after preemption), by level %v; runtimes %+v; inversions %d",
		shards, total, len(leases), resumed, perLevel, sumStats(rts...), inversions)
	require.Equal(t, total, len(done), "every task done")
	require.Zero(t, inversions, "priority inversions, e.g. %v", sample)
}

// assertNoErr reports err as a test error (from any goroutine) and whether
// there was none.
func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("enqueue: %v", err)
		return false
	}
	return true
}
