package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis/sentinelproc"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// job is a chaos task's payload: steps of ms each, checkpointed after each;
// U is the enqueue time (unix ns) of urgent tasks, Phase tags them; Starts
// asks the handler to record its first start (the failover scenario).
type job struct {
	Steps  int    `json:"steps"`
	MS     int    `json:"ms"`
	U      int64  `json:"u,omitempty"`
	Phase  string `json:"phase,omitempty"`
	Starts bool   `json:"s,omitempty"`
}

// Ledger keys, outside the queue's namespace.
const (
	kDone   = "chaos:done"   // SET of task IDs that succeeded
	kDups   = "chaos:dups"   // HASH cause -> duplicate successes
	kBreach = "chaos:breach" // HASH kind -> count
	kStats  = "chaos:stats"  // HASH event -> count
	kMaxCP  = "chaos:maxcp"  // ZSET id -> highest checkpoint step saved
	kLat    = "chaos:lat:"   // LIST per phase of urgent start latency (µs)
	kStarts = "chaos:starts" // ZSET id -> first start (unix ms), tasks with Starts
)

// queueConfig is the workers' and the producer's. Retention keeps a done
// task's record, so that a producer retrying an enqueue whose reply was lost
// (Redis killed) gets ErrDuplicateTask instead of enqueueing the task again.
func queueConfig() queue.Config {
	return queue.Config{Namespace: "chaos", LeaseDuration: 3 * time.Second, Retention: 10 * time.Minute,
		Backoff: func(int) time.Duration { return 200 * time.Millisecond }}
}

// runWorker is `overtake-chaos worker ADDR ID LOG`: a worker process.
func runWorker(addr, id, logPath string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	log := zap.New(zapCore(logFile)).With(zap.String("worker", id))
	rdb := workerClient(addr)
	defer rdb.Close()
	if strings.HasPrefix(id, fbTag) { // the fail-back case's
		rt, err := newFbRuntime(rdb, id, log)
		if err != nil {
			return err
		}
		return rt.Run(ctx)
	}
	q, err := queue.New(rdb, queueConfig())
	if err != nil {
		return err
	}
	mux := handlers.NewMux()
	var runs atomic.Int64 // numbers this worker's runs, for the ledger's run IDs
	mux.HandleFunc("chaos", func(ctx context.Context, t *queue.TaskInfo) error {
		return handle(ctx, rdb, fmt.Sprintf("%s/%d", id, runs.Add(1)), t)
	})
	rt, err := runtime.New(q, mux, runtime.Config{Concurrency: 8, WorkerID: id, HeartbeatInterval: time.Second,
		GracePeriod: 2 * time.Second, MaxRedisBackoff: 500 * time.Millisecond, Logger: log,
		ShutdownTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	return rt.Run(ctx)
}

// handle runs a chaos task and keeps the ledger: start latency of urgent
// tasks, overlapping runs, checkpoint progress, exactly-once success. run
// identifies this run: the worker's ID and a number.
func handle(ctx context.Context, rdb *redis.Client, run string, t *queue.TaskInfo) error {
	var j job
	if err := json.Unmarshal(t.Payload, &j); err != nil {
		return handlers.SkipRetry(err)
	}
	bg := context.WithoutCancel(ctx)
	if j.U > 0 && t.Attempt == 0 && t.Preemptions == 0 && t.Recoveries == 0 {
		rdb.RPush(bg, kLat+j.Phase, time.Since(time.Unix(0, j.U)).Microseconds())
	}
	if j.Starts {
		rdb.ZAddNX(bg, kStarts, redis.Z{Score: float64(time.Now().UnixMilli()), Member: t.ID})
	}
	owner := "chaos:owner:" + t.ID
	if err := takeOwner(bg, rdb, owner, run); err != nil {
		return err
	}
	defer releaseOwner(bg, rdb, owner, run)
	step, _, err := checkpoint.Load[int](ctx)
	if err != nil {
		return err
	}
	// A run that starts behind the progress already saved is a breach only
	// if it can commit: a stale run (its lease was lost before its handler
	// started) is fenced off at its first save.
	behind := ""
	if best, err := rdb.ZScore(bg, kMaxCP, t.ID).Result(); err == nil && float64(step) < best {
		behind = fmt.Sprintf("%s: loaded step %d, saved up to %.0f; run %s, attempt %d, preemptions %d, recoveries %d, seq %d",
			t.ID, step, best, run, t.Attempt, t.Preemptions, t.Recoveries, t.CheckpointSeq)
	}
	for step < j.Steps {
		select {
		case <-ctx.Done():
			_ = checkpoint.Save(ctx, step) // allowed within the grace period
			if errors.Is(context.Cause(ctx), handlers.ErrPreempted) {
				rdb.HIncrBy(bg, kStats, "preempted (checkpointed, requeued)", 1)
			}
			return context.Cause(ctx)
		case <-time.After(time.Duration(j.MS) * time.Millisecond):
		}
		step++
		if err := checkpoint.Save(ctx, step); err != nil {
			if errors.Is(err, queue.ErrLeaseLost) {
				rdb.HIncrBy(bg, kStats, "stale run fenced off (lost lease)", 1)
			}
			return err
		}
		if behind != "" {
			rdb.HIncrBy(bg, kBreach, "checkpoint went backwards", 1)
			rdb.RPush(bg, "chaos:breach:detail", behind)
			behind = ""
		}
		rdb.ZAddGT(bg, kMaxCP, redis.Z{Score: float64(step), Member: t.ID})
		rdb.RPush(bg, "chaos:saves:"+t.ID, fmt.Sprintf("%d@%s", step, run))
		if cur, err := rdb.Get(bg, owner).Result(); err == nil && cur != run {
			rdb.HIncrBy(bg, kStats, "stale run stopped (another run took over)", 1)
			return fmt.Errorf("another run owns the task")
		}
		rdb.PExpire(bg, owner, 1500*time.Millisecond)
	}
	added, err := rdb.SAdd(bg, kDone, t.ID).Result()
	if err != nil {
		return err
	}
	if added == 0 {
		cause := "rerun after its ack was lost (Redis unreachable)"
		if t.Recoveries > 0 {
			cause = "rerun after its worker was killed or stopped (lease recovered)"
		}
		rdb.HIncrBy(bg, kDups, cause, 1)
	}
	return nil
}

var releaseScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// ownerTTL is how long a run's ownership mark lives without a refresh; a
// live run refreshes it every step (tens of ms).
const ownerTTL = 1500 * time.Millisecond

// takeOwner marks run as the one running the task. If another run's mark
// is there, it watches it: a mark that is refreshed belongs to a live run,
// which is a breach (two runs at once); one that expires was left by a run
// that ended without removing it (killed, or Redis unreachable), which is
// not.
func takeOwner(ctx context.Context, rdb *redis.Client, owner, run string) error {
	ok, err := rdb.SetNX(ctx, owner, run, ownerTTL).Result()
	if err != nil || ok {
		return err // Redis unreachable: the attempt fails and is retried
	}
	last, _ := rdb.PTTL(ctx, owner).Result()
	for deadline := time.Now().Add(2 * ownerTTL); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // watching the other run's mark
		if ok, err := rdb.SetNX(ctx, owner, run, ownerTTL).Result(); err == nil && ok {
			return nil
		}
		ttl, err := rdb.PTTL(ctx, owner).Result()
		if err == nil && ttl > last+50*time.Millisecond {
			rdb.HIncrBy(ctx, kBreach, "two runs at once", 1)
			return nil
		}
		last = ttl
	}
	return nil
}

// releaseOwner removes run's mark, retrying for up to ownerTTL while Redis
// is unreachable (the run has ended; its mark must not look live).
func releaseOwner(ctx context.Context, rdb *redis.Client, owner, run string) {
	for deadline := time.Now().Add(ownerTTL); ; {
		if releaseScript.Run(ctx, rdb, []string{owner}, run).Err() == nil || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond) // Redis unreachable: try again shortly
	}
}

// workerClient is a worker's Redis client: a failover client when addr is
// sentinelPrefix followed by the sentinels' addresses, else a client of
// addr.
func workerClient(addr string) *redis.Client {
	if sentinels, ok := strings.CutPrefix(addr, sentinelPrefix); ok {
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sentinelproc.MasterName,
			SentinelAddrs: strings.Split(sentinels, ","), MaxRetries: 1, DialTimeout: time.Second,
			ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	}
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
}

// workerArgs are the arguments of a worker process.
func workerArgs(addr, id, log string) []string { return []string{"worker", addr, id, log} }
