package runtime_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"go.uber.org/zap/zaptest/observer"

	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// reshardFigures are what TestReshardUnderLoad measures once every runtime
// has shut down.
type reshardFigures struct {
	Slot      int
	Migration *testredis.Migration
	Tasks     int
	Lost      []string // never completed: ID and what Redis holds of it
	Again     int      // completed more than once
	MaxConc   int      // most handlers of one task running at once
	Levels    []queue.LevelStats
	Stranded  map[string]int // leftover keys of tasks by kind (t:, s:, c:)
	LogKinds  map[string]int // warnings and errors logged, by kind
	LogSample map[string]string

	mu sync.Mutex // guards Stranded while the masters are scanned
}

// logKinds classify the runtimes' warnings and errors by the Redis answer
// they carry, first match wins.
var logKinds = []string{"planned failure", "BUSYKEY", "TRYAGAIN", "non local key", "CROSSSLOT",
	"ASK", "MOVED", "CLUSTERDOWN", "lease lost"}

func measureReshard(t *testing.T, ctx context.Context, q *queue.Client, cc *redis.ClusterClient,
	runs *runTally, ids []string, seen *observer.ObservedLogs) *reshardFigures {
	f := &reshardFigures{Tasks: len(ids), Stranded: map[string]int{}, LogKinds: map[string]int{},
		LogSample: map[string]string{}}
	runs.mu.Lock()
	f.MaxConc = runs.maxConc
	var lost []string
	for _, id := range ids {
		switch n := runs.done[id]; {
		case n == 0:
			lost = append(lost, id)
		case n > 1:
			f.Again++
		}
	}
	runs.mu.Unlock()

	var prefixes []string
	for k := range max(q.Config().Shards, 1) {
		prefixes = append(prefixes, store.ShardTag(q.Config().Namespace, q.Name(), k)+":")
	}
	for _, id := range lost {
		where := "in no pending list"
		for _, prefix := range prefixes {
			for l := range q.Levels() {
				if pos, err := cc.LPos(ctx, fmt.Sprint(prefix, "p:", l), id, redis.LPosArgs{}).Result(); err == nil {
					where = fmt.Sprintf("at %d of %sp:%d", pos, prefix, l)
				}
			}
		}
		tk, err := q.Inspect(ctx, id)
		state := fmt.Sprint(err)
		if tk != nil {
			state = fmt.Sprintf("%s level %d attempt %d preemptions %d (%v)", tk.State, tk.Level, tk.Attempt, tk.Preemptions, err)
		}
		f.Lost = append(f.Lost, fmt.Sprintf("%s: %s, %s", id, state, where))
	}

	if st, err := q.Stats(ctx); assert.NoError(t, err, "Stats") {
		f.Levels = st.Levels
	}
	assert.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		for _, prefix := range prefixes {
			for _, kind := range []string{"t:", "s:", "c:"} {
				keys, err := n.Keys(ctx, escapeGlob(prefix)+kind+"*").Result()
				if err != nil {
					return err
				}
				f.count(kind, len(keys))
			}
		}
		return nil
	}), "scan the masters")

	for _, e := range seen.All() {
		text := e.Message
		for k, v := range e.ContextMap() {
			if k == "error" {
				text += ": " + fmt.Sprint(v)
			}
		}
		kind := e.Message + ": " + logKind(text)
		if m := scriptLine.FindStringSubmatch(text); m != nil {
			kind += " " + m[1][:8] + ":" + m[2]
		}
		f.LogKinds[kind]++
		if _, ok := f.LogSample[kind]; !ok {
			f.LogSample[kind] = text
		}
	}
	return f
}

// scriptLine finds the script (its SHA) and line of a script error.
var scriptLine = regexp.MustCompile(`script: ([0-9a-f]{40}), on @user_script:(\d+)`)

// logKind returns the first of logKinds in text, or "other".
func logKind(text string) string {
	for _, k := range logKinds {
		if strings.Contains(text, k) {
			return k
		}
	}
	return "other"
}

// count adds n leftover keys of kind; ForEachMaster runs concurrently.
func (f *reshardFigures) count(kind string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Stranded[kind] += n
}

func escapeGlob(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}

func describeMigration(m *testredis.Migration) string {
	if m == nil {
		return "not started"
	}
	return fmt.Sprintf("%s -> %s, %d keys in %d batches, %d BUSYKEY %v", m.From, m.To, m.Moved, m.Batches, len(m.Busy), m.Busy)
}

func (f *reshardFigures) log(t *testing.T) {
	t.Helper()
	var active, pending, sched, dead []int64
	for _, l := range f.Levels {
		active, pending = append(active, l.Active), append(pending, l.Pending)
		sched, dead = append(sched, l.Scheduled), append(dead, l.Dead)
	}
	t.Logf("RESHARD tasks=%d lost=%d again=%d maxconc=%d active=%v pending=%v scheduled=%v dead=%v stranded=%v logs=%v",
		f.Tasks, len(f.Lost), f.Again, f.MaxConc, active, pending, sched, dead, f.Stranded, f.LogKinds)
	byKind := map[string]int{}
	for i, l := range f.Lost {
		if i < 10 {
			t.Logf("lost %s", l)
		}
		byKind[l[strings.Index(l, ": ")+2:]]++
	}
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		t.Logf("lost %d: %s", byKind[k], k)
	}
	for _, k := range slices.Sorted(maps.Keys(f.LogSample)) {
		t.Logf("log %s (%d), e.g. %s", k, f.LogKinds[k], f.LogSample[k])
	}
}

// require fails the test on every departure from a correct run.
func (f *reshardFigures) require(t *testing.T) {
	t.Helper()
	assert.Empty(t, f.Lost, "tasks never completed")
	assert.Equal(t, 1, f.MaxConc, "most handlers of one task at once")
	assert.Zero(t, f.Again, "tasks completed more than once")
	for _, l := range f.Levels {
		assert.Equal(t, [4]int64{}, [4]int64{l.Active, l.Pending, l.Scheduled, l.Dead},
			"level %d's active, pending, scheduled and dead counts", l.Level)
	}
	assert.Equal(t, map[string]int{"t:": 0, "s:": 0, "c:": 0}, f.Stranded, "keys of tasks left behind")
	// A refusal while the slot moves is no outage, and no script is
	// refused part-way through; no outcome is given up on.
	for k := range f.LogKinds {
		for _, bad := range []string{"non local key", "redis unavailable", "could not record", "lease lost"} {
			assert.NotContains(t, k, bad, "log kinds")
		}
	}
	if f.Migration != nil {
		assert.Empty(t, f.Migration.Busy, "keys the migration found on both masters (BUSYKEY)")
	}
}
