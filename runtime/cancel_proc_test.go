package runtime_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A worker process for the cancel tests: the test binary re-executed with
// envCancelWorker set runs a runtime of one slot whose handlers report to
// Redis what they saw (cancelReport), for at most two minutes.
const (
	envCancelWorker = "OVERTAKE_TEST_CANCEL_WORKER" // the worker ID
	envCancelAddr   = "OVERTAKE_TEST_CANCEL_ADDR"   // Redis host:port
	envCancelNS     = "OVERTAKE_TEST_CANCEL_NS"     // queue namespace
	envCancelLease  = "OVERTAKE_TEST_CANCEL_LEASE"  // LeaseDuration, ms
	envCancelBeat   = "OVERTAKE_TEST_CANCEL_BEAT"   // HeartbeatInterval, ms
)

// cancelReport is where a cancel worker's handlers report: the list
// <ns>:started gets "<id>|<lease start, ms>" for every run that starts,
// <ns>:cause:<id> the cause of a run's context once it ends ("" if it
// succeeded first).
type cancelReport struct {
	rdb redis.UniversalClient
	ns  string
}

func (r cancelReport) startedKey() string        { return r.ns + ":started" }
func (r cancelReport) causeKey(id string) string { return r.ns + ":cause:" + id }
func (r cancelReport) started(ctx context.Context, tk *queue.TaskInfo) {
	r.rdb.RPush(context.WithoutCancel(ctx), r.startedKey(), tk.ID+"|"+strconv.FormatInt(tk.LeasedAt.UnixMilli(), 10))
}
func (r cancelReport) ended(ctx context.Context, id string, cause error) {
	s := ""
	if cause != nil {
		s = cause.Error()
	}
	r.rdb.RPush(context.WithoutCancel(ctx), r.causeKey(id), s)
}

// cancelMux is the cancel worker's handlers: "block" runs until its
// context ends; "stubborn" reports its context's end, then runs on until
// the process dies; "race" succeeds after the microseconds its payload
// says unless its context ends first; "quick" succeeds at once.
func cancelMux(life context.Context, rep cancelReport) *handlers.Mux {
	mux := handlers.NewMux()
	mux.HandleFunc("block", func(ctx context.Context, tk *queue.TaskInfo) error {
		rep.started(ctx, tk)
		<-ctx.Done()
		rep.ended(ctx, tk.ID, context.Cause(ctx))
		return ctx.Err()
	})
	mux.HandleFunc("stubborn", func(ctx context.Context, tk *queue.TaskInfo) error {
		rep.started(ctx, tk)
		<-ctx.Done()
		rep.ended(ctx, tk.ID, context.Cause(ctx))
		<-life.Done()
		return ctx.Err()
	})
	mux.HandleFunc("race", func(ctx context.Context, tk *queue.TaskInfo) error {
		rep.started(ctx, tk)
		us, _ := strconv.Atoi(string(tk.Payload))
		select {
		case <-ctx.Done():
			rep.ended(ctx, tk.ID, context.Cause(ctx))
			return ctx.Err()
		case <-time.After(time.Duration(us) * time.Microsecond):
			rep.ended(ctx, tk.ID, nil)
			return nil
		}
	})
	mux.HandleFunc("quick", func(ctx context.Context, tk *queue.TaskInfo) error {
		rep.started(ctx, tk)
		return nil
	})
	return mux
}

// cancelWorkerProcess is the cancel worker's main.
func cancelWorkerProcess() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ms := func(env string) time.Duration {
		n, _ := strconv.Atoi(os.Getenv(env))
		return time.Duration(n) * time.Millisecond
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envCancelAddr)})
	defer rdb.Close()
	ns := os.Getenv(envCancelNS)
	q, err := queue.New(rdb, cancelQueueConfig(ns, ms(envCancelLease)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return runProcess(ctx, q, cancelMux(ctx, cancelReport{rdb: rdb, ns: ns}), runtime.Config{Concurrency: 1,
		WorkerID: os.Getenv(envCancelWorker), HeartbeatInterval: ms(envCancelBeat), GracePeriod: 200 * time.Millisecond,
		PollInterval: 100 * time.Millisecond})
}

// cancelQueueConfig is the queue of the cancel tests, the same in the
// test and its worker processes: done and canceled records are kept.
func cancelQueueConfig(ns string, lease time.Duration) queue.Config {
	shards, _ := envShards() // (a bad value fails the parent's setup)
	return queue.Config{Namespace: ns, Retention: time.Hour, LeaseDuration: lease, Shards: shards}
}

// cancelFixture is one cancel test: its Redis, queue and reports.
type cancelFixture struct {
	addr, ns string
	rdb      *redis.Client
	q        *queue.Client
	rep      cancelReport
	lease    time.Duration
}

func newCancelFixture(t *testing.T, addr string, rdb *redis.Client, lease time.Duration) *cancelFixture {
	t.Helper()
	ns := "cancel-" + strings.ReplaceAll(t.Name(), "/", "-")
	q, err := queue.New(rdb, cancelQueueConfig(ns, lease))
	require.NoError(t, err)
	return &cancelFixture{addr: addr, ns: ns, rdb: rdb, q: q, rep: cancelReport{rdb: rdb, ns: ns}, lease: lease}
}

// worker starts a cancel worker process with heartbeat interval beat; it
// is killed at cleanup if still alive.
func (f *cancelFixture) worker(t *testing.T, id string, beat time.Duration) *exec.Cmd {
	t.Helper()
	return startTestProcess(t, envCancelWorker+"="+id, envCancelAddr+"="+f.addr, envCancelNS+"="+f.ns,
		envCancelLease+"="+strconv.FormatInt(f.lease.Milliseconds(), 10),
		envCancelBeat+"="+strconv.FormatInt(beat.Milliseconds(), 10))
}

// enqueue enqueues a task of type typ at level with payload p.
func (f *cancelFixture) enqueue(t *testing.T, typ, p string, level int, opts ...queue.Option) string {
	t.Helper()
	tk, err := f.q.Enqueue(context.Background(), queue.NewTask(typ, []byte(p)),
		append([]queue.Option{queue.Level(level), queue.MaxRetries(5)}, opts...)...)
	require.NoError(t, err)
	return tk.ID
}

// awaitStart waits until a run of task id started.
func (f *cancelFixture) awaitStart(t *testing.T, id string) {
	t.Helper()
	require.Eventually(t, func() bool { return f.runs(t, id) > 0 }, longWait, time.Millisecond,
		"task %s never started", id)
}

// runs counts the runs of task id that started.
func (f *cancelFixture) runs(t *testing.T, id string) int {
	t.Helper()
	return f.runsAfter(t, id, time.Time{})
}

// runsAfter counts the runs of task id whose lease began after at (by
// Redis's clock, in ms).
func (f *cancelFixture) runsAfter(t *testing.T, id string, at time.Time) int {
	t.Helper()
	all, err := f.rdb.LRange(context.Background(), f.rep.startedKey(), 0, -1).Result()
	require.NoError(t, err)
	n := 0
	for _, s := range all {
		rid, ms, _ := strings.Cut(s, "|")
		leased, _ := strconv.ParseInt(ms, 10, 64)
		if rid == id && leased > at.UnixMilli() {
			n++
		}
	}
	return n
}

// cancel cancels task id and returns Redis's time once it returned: no
// run of the task may begin after it.
func (f *cancelFixture) cancel(t *testing.T, id string) (time.Time, error) {
	t.Helper()
	err := f.q.Cancel(context.Background(), id)
	now, terr := f.rdb.Time(context.Background()).Result()
	require.NoError(t, terr)
	return now, err
}

// cause waits for the cause the run of task id reported as it ended.
func (f *cancelFixture) cause(t *testing.T, id string) string {
	t.Helper()
	v, err := f.rdb.BLPop(context.Background(), longWait, f.rep.causeKey(id)).Result()
	require.NoError(t, err, "the run of %s reported no end", id)
	return v[1]
}
