package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// startReplicated starts a primary and one replica on loopback and returns
// a client of the primary once the replica is in sync.
func startReplicated(t testing.TB) *redis.Client {
	t.Helper()
	pc, _ := startReplicatedPair(t)
	return pc
}

// startReplicatedPair is startReplicated that also returns the replica's
// server, to stop and restart it.
func startReplicatedPair(t testing.TB) (*redis.Client, *testredis.Server) {
	t.Helper()
	primary := testredis.StartServer(t, testredis.ServerOptions{})
	replica := testredis.StartServer(t, testredis.ServerOptions{})
	rc := replica.NewClient(t)
	host, port, _ := strings.Cut(primary.Addr(), ":")
	ctx := context.Background()
	require.NoError(t, rc.ReplicaOf(ctx, host, port).Err())
	pc := primary.NewClient(t)
	require.Eventually(t, func() bool {
		info, err := pc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
	}, 20*time.Second, 20*time.Millisecond, "the replica never came online")
	// Online is not yet acknowledging: a first WAIT on a loaded machine
	// can outlast a test's short WaitTimeout (seen once in CI). Wait
	// until one is confirmed.
	require.Eventually(t, func() bool {
		n, err := pc.Wait(ctx, 1, time.Second).Result()
		return err == nil && n >= 1
	}, 20*time.Second, 20*time.Millisecond, "the replica never acknowledged a write")
	return pc, replica
}

// waitCalls is how many WAIT commands the server has run.
func waitCalls(t testing.TB, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_wait:calls="); ok {
			n, _, _ := strings.Cut(rest, ",")
			var v int64
			for _, c := range n {
				v = v*10 + int64(c-'0')
			}
			return v
		}
	}
	return 0
}

// With WaitReplicas, every write call sends WAIT on its own connection
// and succeeds when enough replicas confirm; when too few do, the call
// fails with ErrNotReplicated, though the write was done on the primary: a
// lease still hands out its tasks.
func TestWaitReplicas(t *testing.T) {
	rdb := startReplicated(t)

	t.Run("confirmed", func(t *testing.T) {
		e := newEnvOn(t, rdb, "wait1", func(c *Config) { c.WaitReplicas = 1 })
		before := waitCalls(t, rdb)
		tk := e.enqueue("one")
		_, err := e.c.EnqueueBatch(e.ctx, []*Task{NewTask("t", nil), NewTask("t", nil)})
		require.NoError(t, err)
		got := e.lease("w", 3)
		require.Len(t, got, 3)
		for _, l := range got {
			require.NoError(t, e.c.Ack(e.ctx, l))
		}
		e.gone(tk.ID)
		require.GreaterOrEqual(t, waitCalls(t, rdb)-before, int64(3), "WAIT was not sent")
	})

	t.Run("too few replicas", func(t *testing.T) {
		// 250ms, not less: the one replica's ack must come within it for
		// the "1 of 2" below, on a loaded machine too.
		e := newEnvOn(t, rdb, "wait2", func(c *Config) { c.WaitReplicas, c.WaitTimeout = 2, 250*time.Millisecond })
		_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("x")), ID("a"))
		require.ErrorIs(t, err, ErrNotReplicated)
		require.Contains(t, err.Error(), "1 of 2 replicas")
		require.Equal(t, StatePending, e.inspect("a").State, "the write was done on the primary")

		out, err := e.c.EnqueueBatch(e.ctx, []*Task{NewTask("t", nil), NewTask("t", nil)})
		require.ErrorIs(t, err, ErrNotReplicated)
		require.Equal(t, []*Task{nil, nil}, out)

		leased, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 5})
		require.NoError(t, err, "a lease is not failed for its WAIT")
		require.Len(t, leased.Tasks, 3)
		require.ErrorIs(t, e.c.Ack(e.ctx, leased.Tasks[0]), ErrNotReplicated)
		e.gone(leased.Tasks[0].ID)
		// A lost lease stays a lost lease, not "not replicated".
		require.ErrorIs(t, e.c.Ack(e.ctx, leased.Tasks[0]), ErrLeaseLost)
	})
}

// waitTimeouts records the timeout (ms) of every WAIT a client sends.
type waitTimeouts struct {
	mu sync.Mutex
	ms []int64
}

func (w *waitTimeouts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (w *waitTimeouts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { w.note(cmd); return next(ctx, cmd) }
}
func (w *waitTimeouts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			w.note(c)
		}
		return next(ctx, cmds)
	}
}
func (w *waitTimeouts) note(cmd redis.Cmder) {
	if a := cmd.Args(); len(a) == 3 && cmd.Name() == "wait" {
		ms, _ := a[2].(int64)
		w.mu.Lock()
		w.ms = append(w.ms, ms)
		w.mu.Unlock()
	}
}

// count returns how many WAITs were sent with a timeout of ms.
func (w *waitTimeouts) count(ms int64) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, v := range w.ms {
		if v == ms {
			n++
		}
	}
	return n
}

// A lost replica does not make every write call wait the whole
// WaitTimeout: after the first shortfall, WAITs wait shortWait, and one a
// probeEvery waits in full; each call still fails with ErrNotReplicated.
// Once the replica is back, the next probe ends the shortfall and calls
// are confirmed again. Without replicaWatch, every WAIT waits in full.
func TestWaitReplicasLostReplica(t *testing.T) {
	pc, replica := startReplicatedPair(t)
	hook := &waitTimeouts{}
	pc.AddHook(hook)
	const full = 300 * time.Millisecond
	e := newEnvOn(t, pc, "waitlost", func(c *Config) { c.WaitReplicas, c.WaitTimeout = 1, full })
	// Confirmed while the replica runs: at once on a quiet machine; on a
	// loaded one the first WAIT can outlast 300ms (seen once in CI), and
	// then the probe (one full WAIT a probeEvery) confirms again.
	require.Eventually(t, func() bool {
		_, err := e.c.Enqueue(e.ctx, NewTask("t", nil))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "never confirmed while the replica runs")
	pre := hook.count(full.Milliseconds()) // the full WAITs before the replica stops

	require.NoError(t, replica.Stop())
	start := time.Now()
	const calls = 20
	for i := range calls {
		_, err := e.c.Enqueue(e.ctx, NewTask("t", nil), ID(fmt.Sprint("lost-", i)))
		require.ErrorIs(t, err, ErrNotReplicated, "call %d", i)
		require.Equal(t, StatePending, e.inspect(fmt.Sprint("lost-", i)).State, "done on the primary")
	}
	elapsed := time.Since(start)
	fulls := hook.count(full.Milliseconds()) - pre
	// The first shortfall, then one probe per probeEvery of the run.
	bound := 1 + int(elapsed/probeEvery) + 1
	require.LessOrEqual(t, fulls, bound, "%d full WAITs in %v", fulls, elapsed)
	require.Less(t, fulls, calls)
	require.Positive(t, hook.count(shortWait.Milliseconds()), "no short WAIT while the replica was gone")

	require.NoError(t, replica.Restart())
	host, port, _ := strings.Cut(pc.Options().Addr, ":")
	require.NoError(t, replica.NewClient(t).ReplicaOf(e.ctx, host, port).Err()) // set at run time, not in its config
	require.Eventually(t, func() bool {
		_, err := e.c.Enqueue(e.ctx, NewTask("t", nil))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "calls were never confirmed again")
	before := hook.count(full.Milliseconds())
	_, err := e.c.Enqueue(e.ctx, NewTask("t", nil))
	require.NoError(t, err)
	require.Equal(t, before+1, hook.count(full.Milliseconds()), "the shortfall did not end")
}

// A negative WaitReplicas or WaitTimeout is refused.
func TestWaitReplicasConfig(t *testing.T) {
	rdb := testredis.Mini(t).Client
	_, err := New(rdb, Config{WaitReplicas: -1})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(rdb, Config{WaitTimeout: -time.Second})
	require.ErrorIs(t, err, ErrInvalidConfig)
}

// BenchmarkWaitReplicas is the cost of WaitReplicas on a primary with one
// replica: tasks enqueued in one grouped call, leased in one call and
// acked (every call a write), k tasks a round, with and without WAIT.
// ns/op is per task; compare the pairs of one run.
func BenchmarkWaitReplicas(b *testing.B) {
	rdb := startReplicated(b)
	for _, k := range []int{1, 20} {
		for _, n := range []int{0, 1} {
			name := fmt.Sprintf("tasks=%d/replicas=%d", k, n)
			b.Run(name, func(b *testing.B) {
				e := newEnvOn(b, rdb, "bwait-"+name, func(c *Config) { c.WaitReplicas = n; c.Clock = nil })
				batch := make([]*Task, k)
				b.ResetTimer()
				for done := 0; done < b.N; done += k {
					for i := range batch {
						batch[i] = NewTask("t", nil)
					}
					if _, err := e.c.EnqueueBatch(e.ctx, batch); err != nil {
						b.Fatal(err)
					}
					res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: k})
					if err != nil || len(res.Tasks) != k {
						b.Fatal(err, res)
					}
					errs := e.c.finishBatch(e.ctx, ackOps(res.Tasks))
					for _, err := range errs {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// ackOps are the acks of ts, for one finish call.
func ackOps(ts []*Task) []finishOp {
	ops := make([]finishOp, len(ts))
	for i, t := range ts {
		ops[i] = finishOp{t: t, mode: "ack"}
	}
	return ops
}
