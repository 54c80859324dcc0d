package runtime_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// envReshardPause sets TestReshardUnderLoad's pause between two batches of
// the migration (a time.Duration, default 5ms: longer keeps the slot
// half-moved longer).
const envReshardPause = "OVERTAKE_RESHARD_PAUSE"

// errPlanned is the first attempt's failure of the tasks that retry once.
var errPlanned = errors.New("planned failure")

// TestReshardUnderLoad is the scenario of issue 21 ("Correct while Redis
// Cluster moves the queue's slot"): 2,000 tasks at three levels processed
// by three runtimes, each on its own cluster client, on a real three-master
// Redis Cluster, while the queue's slot migrates to another master the way
// `redis-cli --cluster reshard` does it (testredis.Cluster.MigrateSlot:
// batches of 10 keys, with a pause so that the runtimes meet the slot
// half-moved). Low tasks save checkpoints and are preempted by urgent
// waves that arrive during the migration; one task in 20 fails once and
// retries. It requires that no task is lost, none runs twice at once, every
// task completes once, no key of a task is left behind, and the counters of
// Stats are exact afterwards, and it logs the figures and the runtimes'
// warnings and errors by kind. OVERTAKE_RESHARD_PAUSE=20ms keeps the slot
// half-moved longer (default 5ms between batches).
//
// No script runs while the slot moves (each declares the key absent, see
// internal/store/declare.go), so the migration is an outage of the queue:
// leases last 10s, longer than a migration at OVERTAKE_RESHARD_PAUSE=20ms
// (about 4s) plus a heartbeat interval, since a migration that outlasts a
// lease lets other workers recover tasks still held, as any outage does.
func TestReshardUnderLoad(t *testing.T) { reshardUnderLoad(t, 1, false) }

// TestReshardShardedUnderLoad is TestReshardUnderLoad on a queue of three
// shards (issue 31) whose shard 1's slot migrates: the other shards' calls
// go on meanwhile, and the same requirements hold.
func TestReshardShardedUnderLoad(t *testing.T) { reshardUnderLoad(t, 3, false) }

// TestFailoverShardedUnderLoad is the same load on a queue of three shards
// on a cluster with a replica per master, where the master of shard 1's
// slot hands it to its replica as an operator's switchover does (CLUSTER
// FAILOVER, testredis.Cluster.Failover) while the urgent waves arrive:
// the clients follow the slots to the new master (MOVED), and the same
// requirements hold.
func TestFailoverShardedUnderLoad(t *testing.T) { reshardUnderLoad(t, 3, true) }

func reshardUnderLoad(t *testing.T, shards int, failover bool) {
	if testing.Short() {
		t.Skip("-short: no Redis Cluster")
	}
	const (
		lows, mids, urgents = 1500, 300, 200
		total               = lows + mids + urgents
		waves               = 10
		workers, conc       = 3, 8
		lowWork             = 30 * time.Millisecond
	)
	pause := 5 * time.Millisecond
	if v := os.Getenv(envReshardPause); v != "" {
		var err error
		pause, err = time.ParseDuration(v)
		require.NoError(t, err, envReshardPause)
	}
	start := testredis.StartCluster
	if failover {
		start = testredis.StartClusterWithReplicas
	}
	cl := start(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	qcfg := queue.Config{Namespace: "rs" + hex.EncodeToString(b[:]), Name: "reshard", LeaseDuration: 10 * time.Second,
		Shards: shards}
	newQ := func() *queue.Client {
		q, err := queue.New(cl.NewClient(t), qcfg)
		require.NoError(t, err)
		return q
	}
	q := newQ()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cc := cl.Client().(*redis.ClusterClient)
	slot := int(cc.ClusterKeySlot(ctx, store.ShardTag(qcfg.Namespace, qcfg.Name, min(shards-1, 1))).Val()) // shard 1's

	runs := newRunTally()
	var mu sync.Mutex
	completed := 0
	progress := make(chan int, total*4) // completions so far, after each
	complete := func(leave func(bool)) {
		leave(true)
		mu.Lock()
		completed++
		n := completed
		mu.Unlock()
		progress <- n
	}
	failOnce := func(tk *queue.TaskInfo) bool { return tk.Attempt == 0 && string(tk.Payload) == "fail" }
	mux := handlers.NewMux()
	mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
		leave := runs.enter(tk)
		step, _, err := checkpoint.Load[int](ctx)
		if err != nil {
			leave(false)
			return handlers.SkipRetry(err)
		}
		for ; step < 3; step++ {
			select {
			case <-ctx.Done():
				err := checkpoint.Save(ctx, step)
				leave(false)
				return errors.Join(ctx.Err(), err)
			case <-time.After(lowWork / 3): // the task's work
			}
			if step == 1 {
				if err := checkpoint.Save(ctx, step+1); err != nil {
					leave(false)
					return err
				}
			}
		}
		if failOnce(tk) {
			leave(false)
			return handlers.RetryAfter(50*time.Millisecond, errPlanned)
		}
		complete(leave)
		return nil
	})
	quick := func(ctx context.Context, tk *queue.TaskInfo) error {
		leave := runs.enter(tk)
		<-time.After(2 * time.Millisecond) // the task's work
		if failOnce(tk) {
			leave(false)
			return handlers.RetryAfter(50*time.Millisecond, errPlanned)
		}
		complete(leave)
		return nil
	}
	mux.HandleFunc("mid", quick)
	mux.HandleFunc("urgent", quick)

	logs, seen := observer.New(zapcore.WarnLevel)
	var rts []*runtime.Runtime
	for i := range workers {
		rts = append(rts, startRuntime(t, newQ(), mux, runtime.Config{
			WorkerID: fmt.Sprintf("reshard-%d-%d", shards, i), Concurrency: conc, PollInterval: fastPoll,
			Logger: zap.New(logs),
		}))
	}

	// enq enqueues n tasks, retrying those refused (as a producer would)
	// for up to a minute; refusals are counted by kind.
	var ids []string
	enqErrs := map[string]int{}
	enq := func(typ string, n, level int) {
		fails := n / 20 // the first n/20 tasks fail once, then retry
		for try := 0; n > 0; try++ {
			require.Less(t, try, 1200, "%d %s tasks still refused", n, typ)
			if try > 0 {
				<-time.After(50 * time.Millisecond) // a producer's retry pause
			}
			tasks := make([]*queue.Task, n)
			for i := range tasks {
				tasks[i] = queue.NewTask(typ, nil)
				if i < fails {
					tasks[i] = queue.NewTask(typ, []byte("fail"))
				}
			}
			got, err := q.EnqueueBatch(ctx, tasks, queue.Level(level))
			if err != nil {
				enqErrs[logKind(err.Error())]++
			}
			n, fails = 0, 0
			for i, tk := range got {
				if tk != nil {
					ids = append(ids, tk.ID)
					continue
				}
				n++
				if string(tasks[i].Payload()) == "fail" {
					fails++
				}
			}
		}
	}
	enq("low", lows, 0)
	enq("mid", mids, 1)

	// Migrate once the runtimes are busy; urgent waves arrive meanwhile.
	for n := 0; n < 2*workers*conc; {
		n = receive(t, progress, "the first completions")
	}
	type result struct {
		m   *testredis.Migration
		err error
		dur time.Duration
	}
	migrated := make(chan result, 1)
	var promoted string // the replica that took over (failover)
	go func() {
		start := time.Now()
		if failover {
			p, err := failoverSlot(ctx, cl, slot)
			promoted = p
			migrated <- result{nil, err, time.Since(start)}
			return
		}
		m, err := cl.MigrateSlot(ctx, slot, testredis.MigrateOptions{Pause: pause, Replace: true})
		migrated <- result{m, err, time.Since(start)}
	}()
	for range waves {
		enq("urgent", urgents/waves, 2)
		<-time.After(100 * time.Millisecond) // spread the waves over the migration
	}
	var mig result
	select {
	case mig = <-migrated:
	case <-time.After(time.Minute):
		t.Fatal("the migration did not end within a minute")
	}

	// Wait for every task, bounded: a lost task never completes (one whose
	// lease ran out is recovered after LeaseDuration, 10s).
	deadline := time.After(30 * time.Second)
	for n := 0; n < total; {
		select {
		case n = <-progress:
		case <-deadline:
			n = total
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	for _, rt := range rts {
		_ = rt.Shutdown(sctx)
	}
	scancel()

	f := measureReshard(t, ctx, q, cc, runs, ids, seen)
	f.Slot, f.Migration = slot, mig.m
	if failover {
		t.Logf("failover of slot %d's master to its replica in %v (err %v)", slot, mig.dur.Round(time.Millisecond), mig.err)
	} else {
		t.Logf("migration of slot %d: %s in %v (err %v)", slot, describeMigration(mig.m), mig.dur.Round(time.Millisecond), mig.err)
	}
	t.Logf("runtimes: %+v; enqueue calls refused: %v", sumStats(rts...), enqErrs)
	f.log(t)
	require.NoError(t, mig.err, "migration")
	f.require(t)
	if failover {
		// The queue's scripts ran on the promoted replica: a replica runs
		// none (it gets their writes), so the clients followed the slot.
		n := redis.NewClient(&redis.Options{Addr: promoted})
		defer n.Close()
		stats, err := n.Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		require.Regexp(t, `cmdstat_evalsha:calls=[1-9]`, stats, "scripts ran on the new master %s", promoted)
	}
}

// failoverSlot fails over the master that serves slot to its replica
// (testredis.Cluster.Failover) and returns the replica's address.
func failoverSlot(ctx context.Context, cl *testredis.Cluster, slot int) (string, error) {
	owner, err := cl.SlotOwner(ctx, slot)
	if err != nil {
		return "", err
	}
	return cl.Failover(ctx, owner)
}
