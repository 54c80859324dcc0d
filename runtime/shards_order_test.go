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
// runtimes drain them: low tasks first, then every level, paced, so a
// backlog of low tasks builds and urgent ones preempt running low ones; it counts the inversions over every
// lease of every task (first leases and resumed runs alike), and the
// fresh tasks leased while a preempted task of their level waited: zero.
func TestShardedStrictOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Redis Cluster")
	}
	cl := testredis.StartCluster(t)
	for _, shards := range []int{1, 3, 6} {
		t.Run(fmt.Sprint("shards=", shards), func(t *testing.T) { shardedOrder(t, cl, shards) })
	}
}

// lease is one lease of a task as its handler saw it: when it was leased
// and when it last became pending before (a resumed run's ReadyAt, when
// its preemption put it back).
type lease struct {
	id      string
	level   int
	at      time.Time
	ready   time.Time
	resumed bool
}

// inversions are what countInversions found.
type inversions struct {
	levels, heads int
	sample        []string
}

// countInversions scans every lease x (level L at t) against every wait of
// a task, from when it became pending (its Enqueue returned, or its
// preemption put it back) to its lease: a wait of a higher level that began
// before t − 10ms and ended after t is an inversion; for a fresh task's
// lease, so is such a wait of a preempted task of level L (it waits at the
// head of its level). Times of Redis (LeasedAt, ReadyAt) are whole ms.
func countInversions(leases []lease, enqueued map[string]time.Time) inversions {
	var out inversions
	from := func(w lease) time.Time {
		if w.resumed {
			return w.ready
		}
		return enqueued[w.id]
	}
	for _, x := range leases {
		for _, w := range leases {
			if w.id == x.id || !from(w).Before(x.at.Add(-inversionWindow)) || !w.at.After(x.at) {
				continue
			}
			kind := ""
			switch {
			case w.level > x.level:
				out.levels++
				kind = "pending"
			case w.level == x.level && w.resumed && !x.resumed:
				out.heads++
				kind = "preempted, at the head of its level"
			default:
				continue
			}
			if len(out.sample) < 5 {
				out.sample = append(out.sample, fmt.Sprintf("%s (level %d) leased at %s while %s (level %d) %s since %s, leased at %s",
					x.id, x.level, x.at.Format("15:04:05.000"), w.id, w.level, kind, from(w).Format("15:04:05.000"),
					w.at.Format("15:04:05.000")))
			}
		}
	}
	return out
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
	runs := map[string]int{}
	enqueued := map[string]time.Time{} // when each task's Enqueue returned
	levelOf := map[string]int{}
	done := map[string]bool{}
	progress := make(chan int, producers*perProducer*2)
	h := handlers.HandlerFunc(func(ctx context.Context, tk *queue.TaskInfo) error {
		mu.Lock()
		leases = append(leases, lease{tk.ID, tk.Level, tk.LeasedAt, tk.ReadyAt, runs[tk.ID] > 0})
		runs[tk.ID]++
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
		if shards < 3 {
			return mrand.IntN(shards)
		}
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
			// Low tasks first, to fill the workers; then every level, paced
			// (one per 10ms each), so urgent tasks meet running low ones.
			pace := time.NewTicker(10 * time.Millisecond)
			defer pace.Stop()
			for i := range perProducer {
				level := 0
				if i >= perProducer/2 {
					level = []int{0, 1, 1, 2, 2}[mrand.IntN(5)]
					<-pace.C
				}
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
	inv := countInversions(leases, enqueued)
	resumed := 0
	for _, l := range leases {
		if l.resumed {
			resumed++
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
	t.Logf("shards %d: %d tasks, %d leases (%d resumed after preemption), by level %v; runtimes %+v; inversions %d, of preempted heads %d",
		shards, total, len(leases), resumed, perLevel, sumStats(rts...), inv.levels, inv.heads)
	require.Equal(t, total, len(done), "every task done")
	require.Zero(t, inv.levels, "priority inversions, e.g. %v", inv.sample)
	require.Zero(t, inv.heads, "preempted tasks passed over in their level, e.g. %v", inv.sample)
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
