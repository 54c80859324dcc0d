package runtime_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
)

// setup returns the queue of a test bundle (setupBundle) with cfg, on its
// own namespace on backend b.
func setup(t *testing.T, b testredis.Backend, cfg queue.Config) *queue.Client {
	t.Helper()
	return setupBundle(t, b, withQueue(cfg)).q
}

// startRuntime starts a runtime and shuts it down at cleanup.
func startRuntime(t *testing.T, q *queue.Client, h handlers.Handler, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	rt, err := runtime.New(q, h, cfg)
	require.NoError(t, err)
	require.NoError(t, rt.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	return rt
}

// enqueue enqueues a task of type typ at level and returns its ID.
func enqueue(t *testing.T, q *queue.Client, typ string, payload string, level int, opts ...queue.Option) string {
	t.Helper()
	tk, err := q.Enqueue(context.Background(), queue.NewTask(typ, []byte(payload)), append([]queue.Option{queue.Level(level)}, opts...)...)
	require.NoError(t, err)
	return tk.ID
}

// The runtime tests' shared world: bounds, clients, and the recorders of
// what handlers did (eventLog, runTally), used by every test file.

// longWait bounds every wait for something that must happen; generous for a
// loaded 2-core machine.
const longWait = 15 * time.Second

// quietSpell is how long a test watches for something that must NOT happen. It
// spans several PollIntervals (fastPoll), so both the wake-up path and the
// slow poll had their chance.
const quietSpell = 800 * time.Millisecond

// fastPoll is the PollInterval of the preemption tests.
const fastPoll = 50 * time.Millisecond

// workerClient returns a queue client on its own Redis connection (a separate
// worker process of the fleet), in the backend's namespace.
func workerClient(t *testing.T, b testredis.Backend, cfg queue.Config) *queue.Client {
	t.Helper()
	cfg.Namespace = b.Prefix
	cfg.Shards = cmp.Or(cfg.Shards, testShards(t))
	q, err := queue.New(b.NewClient(t), cfg)
	require.NoError(t, err)
	return q
}

// eventLog records events in the order they happen.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf(format, a...))
}

func (l *eventLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// index returns the position of the first event e, or -1.
func (l *eventLog) index(e string) int { return slices.Index(l.list(), e) }

// runTally counts, per task ID, the handlers running now (never above one,
// or the same task ran twice at once), the most seen, and completions.
type runTally struct {
	mu      sync.Mutex
	now     map[string]int
	maxConc int
	done    map[string]int
	starts  map[string]int
	maxPre  int
}

func newRunTally() *runTally {
	return &runTally{now: map[string]int{}, done: map[string]int{}, starts: map[string]int{}}
}

// enter marks a handler of tk as running; the returned func marks it
// returned, and counts a completion if ok.
func (r *runTally) enter(tk *queue.TaskInfo) (leave func(ok bool)) {
	r.mu.Lock()
	r.now[tk.ID]++
	r.starts[tk.ID]++
	r.maxConc = max(r.maxConc, r.now[tk.ID])
	r.maxPre = max(r.maxPre, tk.Preemptions)
	r.mu.Unlock()
	return func(ok bool) {
		r.mu.Lock()
		r.now[tk.ID]--
		if ok {
			r.done[tk.ID]++
		}
		r.mu.Unlock()
	}
}

func (r *runTally) maxConcurrent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxConc
}

func (r *runTally) maxPreemptions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxPre
}

func (r *runTally) completions(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done[id]
}

// runningOf returns how many of ids run now, and how many of them
// completed.
func (r *runTally) runningOf(ids []string) (running, done int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if r.now[id] > 0 {
			running++
		}
		if r.done[id] > 0 {
			done++
		}
	}
	return running, done
}

// requireExactlyOnce fails unless every id completed exactly once and no
// other task completed.
func (r *runTally) requireExactlyOnce(t *testing.T, ids []string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		require.Equal(t, 1, r.done[id], "completions of task %s", id)
	}
	require.Len(t, r.done, len(ids), "tasks completed")
}

// sumStats sums the stats of runtimes.
func sumStats(rts ...*runtime.Runtime) runtime.RunStats {
	var s runtime.RunStats
	for _, rt := range rts {
		st := rt.Stats()
		s.Processed += st.Processed
		s.Failed += st.Failed
		s.Dead += st.Dead
		s.Preempted += st.Preempted
		s.Reserved += st.Reserved
		s.Stuck += st.Stuck
	}
	return s
}

// requireInvariant4 checks invariant 4 on each runtime and on their sum:
// preemptions never exceed the urgent tasks leased in order to preempt.
func requireInvariant4(t *testing.T, rts ...*runtime.Runtime) {
	t.Helper()
	for _, rt := range rts {
		st := rt.Stats()
		require.LessOrEqual(t, st.Preempted, st.Reserved, "invariant 4 on worker %s: %+v", rt.WorkerID(), st)
	}
	st := sumStats(rts...)
	require.LessOrEqual(t, st.Preempted, st.Reserved, "invariant 4 across the fleet: %+v", st)
}

// requireDeleted waits until task id's record is deleted (acked, no retention).
func requireDeleted(t *testing.T, q *queue.Client, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := q.Inspect(context.Background(), id)
		return errors.Is(err, queue.ErrTaskNotFound)
	}, longWait, 10*time.Millisecond, "task %s acked and deleted", id)
}

// wasPreempted reports whether a handler's context ended because of a
// preemption.
func wasPreempted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), handlers.ErrPreempted)
}

// receive receives from ch or fails after longWait.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(longWait):
		t.Fatalf("timed out after %v waiting for %s", longWait, what)
		var zero T
		return zero
	}
}

// isClosed reports whether ch is closed (or has a value ready).
func isClosed[T any](ch <-chan T) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// closeOnce returns a channel and a func that closes it once.
func closeOnce() (chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

// envTestShards, when set to a number, is the Shards of the queues the
// runtime's tests open without one of their own (make test-shards runs
// the package so, on three shards).
const envTestShards = "OVERTAKE_TEST_SHARDS"

// testShards is envTestShards's value, 0 when unset.
func testShards(t *testing.T) int {
	n, err := envShards()
	require.NoError(t, err, envTestShards)
	return n
}

// envShards is envTestShards's value, 0 when unset (worker processes read
// it too).
func envShards() (int, error) {
	v := os.Getenv(envTestShards)
	if v == "" {
		return 0, nil
	}
	return strconv.Atoi(v)
}

// skipOnShards skips a test that holds on one shard only, when the
// package's tests run on several (envTestShards): why says what it
// assumes (FIFO within a level across the whole queue, or keys of shard 0
// written by hand).
func skipOnShards(t *testing.T, why string) {
	t.Helper()
	if testShards(t) > 1 {
		t.Skipf("%s=%d: %s", envTestShards, testShards(t), why)
	}
}
