package runtime_test

import (
	"github.com/overtake/overtake/handlers"

	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// Helpers of the preemption tests (preempt_*_test.go, fleet, storm, crash,
// ordering). Names start with pt so they do not clash with other test files.

// ptLong bounds every wait for something that must happen; generous for a
// loaded 2-core machine.
const ptLong = 15 * time.Second

// ptQuiet is how long a test watches for something that must NOT happen. It
// spans several PollIntervals (ptPoll), so both the wake-up path and the
// slow poll had their chance.
const ptQuiet = 800 * time.Millisecond

// ptPoll is the PollInterval of the preemption tests.
const ptPoll = 50 * time.Millisecond

// ptClient returns a queue client on its own Redis connection (a separate
// worker process of the fleet), in the backend's namespace.
func ptClient(t *testing.T, b testredis.Backend, cfg queue.Config) *queue.Client {
	t.Helper()
	cfg.Namespace = b.Prefix
	q, err := queue.New(b.NewClient(t), cfg)
	require.NoError(t, err)
	return q
}

// ptLog records events in the order they happen.
type ptLog struct {
	mu     sync.Mutex
	events []string
}

func (l *ptLog) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf(format, a...))
}

func (l *ptLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// index returns the position of the first event e, or -1.
func (l *ptLog) index(e string) int { return slices.Index(l.list(), e) }

// ptRuns counts, per task ID, the handlers running now (never above one,
// or the same task ran twice at once), the most seen, and completions.
type ptRuns struct {
	mu      sync.Mutex
	now     map[string]int
	maxConc int
	done    map[string]int
	starts  map[string]int
	maxPre  int
}

func newPtRuns() *ptRuns {
	return &ptRuns{now: map[string]int{}, done: map[string]int{}, starts: map[string]int{}}
}

// enter marks a handler of tk as running; the returned func marks it
// returned, and counts a completion if ok.
func (r *ptRuns) enter(tk *queue.TaskInfo) (leave func(ok bool)) {
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

func (r *ptRuns) maxConcurrent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxConc
}

func (r *ptRuns) maxPreemptions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxPre
}

func (r *ptRuns) completions(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done[id]
}

// runningOf returns how many of ids run now, and how many of them
// completed.
func (r *ptRuns) runningOf(ids []string) (running, done int) {
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
func (r *ptRuns) requireExactlyOnce(t *testing.T, ids []string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		require.Equal(t, 1, r.done[id], "completions of task %s", id)
	}
	require.Len(t, r.done, len(ids), "tasks completed")
}

// ptStats sums the stats of runtimes.
func ptStats(rts ...*runtime.Runtime) runtime.RunStats {
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

// ptInvariant4 checks invariant 4 on each runtime and on their sum:
// preemptions never exceed the urgent tasks leased in order to preempt.
func ptInvariant4(t *testing.T, rts ...*runtime.Runtime) {
	t.Helper()
	for _, rt := range rts {
		st := rt.Stats()
		require.LessOrEqual(t, st.Preempted, st.Reserved, "invariant 4 on worker %s: %+v", rt.WorkerID(), st)
	}
	st := ptStats(rts...)
	require.LessOrEqual(t, st.Preempted, st.Reserved, "invariant 4 across the fleet: %+v", st)
}

// ptGone waits until task id's record is deleted (acked, no retention).
func ptGone(t *testing.T, q *queue.Client, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := q.Inspect(context.Background(), id)
		return errors.Is(err, queue.ErrTaskNotFound)
	}, ptLong, 10*time.Millisecond, "task %s acked and deleted", id)
}

// ptPreempted reports whether a handler's context ended because of a
// preemption.
func ptPreempted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), handlers.ErrPreempted)
}

// ptRecv receives from ch or fails after ptLong.
func ptRecv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(ptLong):
		t.Fatalf("timed out after %v waiting for %s", ptLong, what)
		var zero T
		return zero
	}
}

// ptClosed reports whether ch is closed (or has a value ready).
func ptClosed[T any](ch <-chan T) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ptOnce returns a channel and a func that closes it once.
func ptOnce() (chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}
