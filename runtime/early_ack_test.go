package runtime_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// ackHook runs on every Redis command of one client that acks id (its
// last two arguments are id and its token: an ack, carried by a lease call
// or of its own); it may hold the call back or fail it (err, not sent).
type ackHook struct {
	id string
	on func() error
}

func (h ackHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h ackHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 2 && args[len(args)-2] == h.id {
			if err := h.on(); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmd)
	}
}

func (h ackHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// busyIn returns the busy count Redis holds for worker (0 once gone).
func busyIn(t *testing.T, q *queue.Client, worker string) int {
	t.Helper()
	w, _ := fleetWorker(t, q, worker)
	return w.Busy
}

// A handler's success frees its slot as soon as its ack is queued: the
// next lease call carries the ack, and while that call is still on its way
// to Redis the slot already counts free here, though Redis still counts the
// task active (so the fleet never sees the slot free before it is). Once
// the call lands, the task is done and the busy count in Redis is right.
func TestSuccessFreesSlotBeforeAckLands(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	producer, err := queue.New(srv.NewClient(t), queue.Config{Namespace: "early"})
	require.NoError(t, err)
	a := enqueue(t, producer, "job", "a", 1)
	b := enqueue(t, producer, "job", "b", 1)

	carried := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	rdb := srv.NewClient(t)
	rdb.AddHook(ackHook{id: a, on: func() error {
		once.Do(func() { close(carried); <-release }) // the first call acking a
		return nil
	}})
	q, err := queue.New(rdb, queue.Config{Namespace: "early"})
	require.NoError(t, err)
	ran := make(chan string, 2)
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(_ context.Context, tk *queue.TaskInfo) error {
		ran <- tk.ID
		return nil
	})
	rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, HeartbeatInterval: 20 * time.Second})
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) }) // before the runtime's shutdown
	require.Equal(t, a, receive(t, ran, "a to run"))
	receive(t, carried, "the call carrying a's ack")
	require.Equal(t, 0, rt.PoolStats()[0].Busy, "a's slot is free while its ack is on its way")
	rec, err := producer.Inspect(context.Background(), a)
	require.NoError(t, err)
	require.Equal(t, queue.StateActive, rec.State, "the ack has not landed yet")
	released.Do(func() { close(release) })
	require.Equal(t, b, receive(t, ran, "b to run"))
	require.Eventually(t, func() bool {
		ra, _ := producer.Inspect(context.Background(), a)
		rb, _ := producer.Inspect(context.Background(), b)
		return (ra == nil || ra.State == queue.StateDone) && (rb == nil || rb.State == queue.StateDone) &&
			busyIn(t, producer, rt.WorkerID()) == 0 && rt.PoolStats()[0].Busy == 0
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int64(2), rt.Stats().Processed)
}

// When the call carrying an early-freed ack fails (Redis unreachable), the
// run takes its slot back, so that no further lease counts it free, and the
// ack is retried on its own until it lands; the busy count in Redis ends
// right and the task ran once.
func TestCarriedAckFailureRetried(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	producer, err := queue.New(srv.NewClient(t), queue.Config{Namespace: "early-fail"})
	require.NoError(t, err)
	a := enqueue(t, producer, "job", "a", 1)

	var calls atomic.Int32
	failed := make(chan struct{})
	retried := make(chan struct{}, 8)
	release := make(chan struct{})
	rdb := srv.NewClient(t)
	rdb.AddHook(ackHook{id: a, on: func() error {
		switch calls.Add(1) {
		case 1: // the lease call carrying a's ack fails (go-redis does not retry it)
			close(failed)
			return errors.New("test: redis unavailable")
		case 2: // the retry: held until the test has looked at the slot
			<-release
		}
		retried <- struct{}{}
		return nil
	}})
	q, err := queue.New(rdb, queue.Config{Namespace: "early-fail"})
	require.NoError(t, err)
	var runs atomic.Int32
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(context.Context, *queue.TaskInfo) error {
		runs.Add(1)
		return nil
	})
	rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, HeartbeatInterval: 20 * time.Second,
		MaxRedisBackoff: 20 * time.Millisecond})
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) }) // before the runtime's shutdown
	receive(t, failed, "the carried ack to fail")
	require.Eventually(t, func() bool { return rt.PoolStats()[0].Busy == 1 }, 10*time.Second, time.Millisecond,
		"the failed ack's run holds its slot again")
	released.Do(func() { close(release) })
	receive(t, retried, "the ack to be retried")
	require.Eventually(t, func() bool {
		ra, _ := producer.Inspect(context.Background(), a)
		return (ra == nil || ra.State == queue.StateDone) && rt.PoolStats()[0].Busy == 0 &&
			busyIn(t, producer, rt.WorkerID()) == 0
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int32(1), runs.Load())
	require.Equal(t, int64(1), rt.Stats().Processed)
}

// lostReplyHook sends the first command that acks id and then fails it,
// as when Redis ran the script but its reply was lost.
type lostReplyHook struct {
	id   string
	once *sync.Once
	lost chan struct{}
}

func (h lostReplyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h lostReplyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); len(args) > 2 && args[len(args)-2] == h.id {
			h.once.Do(func() {
				err = errors.New("test: reply lost")
				cmd.SetErr(err)
				close(h.lost)
			})
		}
		return err
	}
}

func (h lostReplyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// When the call carrying an early-freed ack ran but its reply was lost,
// the retry finds the lease gone: the task is done in Redis, so the run
// counts as settled and nothing is logged as an unrecorded outcome.
func TestCarriedAckReplyLost(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	producer, err := queue.New(srv.NewClient(t), queue.Config{Namespace: "early-lost"})
	require.NoError(t, err)
	a := enqueue(t, producer, "job", "a", 1)
	rdb := srv.NewClient(t)
	lost := make(chan struct{})
	rdb.AddHook(lostReplyHook{id: a, once: &sync.Once{}, lost: lost})
	q, err := queue.New(rdb, queue.Config{Namespace: "early-lost"})
	require.NoError(t, err)
	mux := handlers.NewMux()
	mux.HandleFunc("job", func(context.Context, *queue.TaskInfo) error { return nil })
	core, logs := observer.New(zapcore.WarnLevel)
	rt := startRuntime(t, q, mux, runtime.Config{Concurrency: 1, Logger: zap.New(core),
		MaxRedisBackoff: 20 * time.Millisecond})
	receive(t, lost, "the carried ack's reply to be lost")
	require.Eventually(t, func() bool {
		ra, _ := producer.Inspect(context.Background(), a)
		return (ra == nil || ra.State == queue.StateDone) && rt.PoolStats()[0].Busy == 0 &&
			busyIn(t, producer, rt.WorkerID()) == 0 && logs.FilterMessage("redis unavailable; retrying ack").Len() > 0
	}, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return rt.Stats().Processed == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Zero(t, logs.FilterMessageSnippet("could not record").Len(), "a landed ack reported as lost")
}
