package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A storm of urgent arrivals against two full pools of long, checkpointing
// low tasks: every task is done exactly once, never runs twice at once,
// resumes from the checkpoint it saved, is preempted at most
// MaxPreemptions times, and preemptions never exceed the urgent tasks
// reserved by preemptors, which never exceed the urgent tasks.
func TestPreemptionStorm(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		const (
			workers     = 2
			concurrency = 8
			lows        = workers * concurrency
			urgents     = 500
			batch       = 50
			steps       = 40
			stepTime    = 10 * time.Millisecond
			maxPre      = 2
		)
		qcfg := queue.Config{}
		q := workerClient(t, b, qcfg)
		runs := newRunTally()
		allDone := make(chan struct{})
		var doneOnce sync.Once
		lowStarted := make(chan string, lows*(maxPre+2))

		var mu sync.Mutex
		saved := map[string]int{} // newest step each low task saved
		var total, urgentDone int
		complete := func(leave func(bool), urgent bool) {
			leave(true)
			mu.Lock()
			total++
			n := total
			if urgent {
				urgentDone++
			}
			mu.Unlock()
			if n == lows+urgents {
				doneOnce.Do(func() { close(allDone) })
			}
		}

		mux := handlers.NewMux()
		mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
			leave := runs.enter(tk)
			step, _, err := checkpoint.Load[int](ctx)
			if err != nil {
				leave(false)
				return handlers.SkipRetry(err)
			}
			mu.Lock()
			assert.Equal(t, saved[tk.ID], step, "task %s resumes from its newest checkpoint", tk.ID)
			mu.Unlock()
			lowStarted <- tk.ID
			save := func(s int) error {
				if err := checkpoint.Save(ctx, s); err != nil {
					return err
				}
				mu.Lock()
				saved[tk.ID] = s
				mu.Unlock()
				return nil
			}
			for step < steps {
				select {
				case <-ctx.Done():
					err := save(step)
					leave(false)
					if err != nil {
						return err
					}
					return ctx.Err()
				case <-time.After(stepTime):
				}
				step++
				if step%5 == 0 {
					if err := save(step); err != nil {
						leave(false)
						return err
					}
				}
			}
			complete(leave, false)
			return nil
		})
		mux.HandleFunc("urgent", func(ctx context.Context, tk *queue.TaskInfo) error {
			leave := runs.enter(tk)
			<-time.After(time.Millisecond) // a little work: urgent tasks overlap
			complete(leave, true)
			return nil
		})

		var rts []*runtime.Runtime
		for i := range workers {
			rts = append(rts, startRuntime(t, workerClient(t, b, qcfg), mux, runtime.Config{
				WorkerID: fmt.Sprintf("storm-%d", i), Concurrency: concurrency, PollInterval: fastPoll,
				Preemption: preempt.Policy{MaxPreemptions: maxPre},
			}))
		}

		ctx := context.Background()
		var ids []string
		lowTasks := make([]*queue.Task, lows)
		for i := range lowTasks {
			lowTasks[i] = queue.NewTask("low", nil)
		}
		got, err := q.EnqueueBatch(ctx, lowTasks, queue.Level(0))
		require.NoError(t, err)
		for _, tk := range got {
			ids = append(ids, tk.ID)
		}
		for range lows {
			receive(t, lowStarted, "the pools to fill with low tasks")
		}

		// Urgent tasks arrive in waves: once a wave is through and the low
		// tasks resumed, the next wave preempts them again, until they
		// reach MaxPreemptions and run to completion.
		lowIDs := slices.Clone(ids)
		start := time.Now()
		for i := 0; i < urgents; i += batch {
			tasks := make([]*queue.Task, batch)
			for j := range tasks {
				tasks[j] = queue.NewTask("urgent", nil)
			}
			got, err := q.EnqueueBatch(ctx, tasks, queue.Level(2))
			require.NoError(t, err)
			for _, tk := range got {
				ids = append(ids, tk.ID)
			}
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return urgentDone >= i+batch
			}, longWait, 5*time.Millisecond, "wave %d through", i/batch)
			require.Eventually(t, func() bool {
				running, done := runs.runningOf(lowIDs)
				return running+done == lows
			}, longWait, 5*time.Millisecond, "low tasks resumed after wave %d", i/batch)
		}
		receive(t, allDone, "every task done")
		t.Logf("storm: %d urgent tasks through %d slots in %v", urgents, lows, time.Since(start))

		runs.requireExactlyOnce(t, ids)
		require.Equal(t, 1, runs.maxConcurrent(), "a task ran twice at once")
		t.Logf("storm: most preemptions of one task: %d", runs.maxPreemptions())
		require.LessOrEqual(t, runs.maxPreemptions(), maxPre, "a task was preempted past MaxPreemptions")
		st := sumStats(rts...)
		t.Logf("storm: %+v", st)
		require.Positive(t, st.Preempted, "the storm preempted nothing")
		require.LessOrEqual(t, st.Preempted, st.Reserved)
		require.LessOrEqual(t, st.Reserved, int64(urgents))
		require.LessOrEqual(t, st.Preempted, int64(lows*maxPre))
		require.Zero(t, st.Dead+st.Failed)
		requireInvariant4(t, rts...)
		require.Eventually(t, func() bool {
			qs, err := q.Stats(ctx)
			if err != nil {
				return false
			}
			for _, l := range qs.Levels {
				if l.Pending+l.Active+l.Scheduled+l.Dead != 0 {
					return false
				}
			}
			return true
		}, longWait, 20*time.Millisecond, "queue empty")
	})
}
