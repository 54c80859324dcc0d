package store

import (
	"cmp"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

var (
	modelSeed  = flag.Uint64("model.seed", 0, "seed of TestModel (0: random)")
	modelSteps = flag.Int("model.steps", 300, "steps of TestModel per backend")
)

type mstate string

const (
	mPending   mstate = "pending"
	mActive    mstate = "active"
	mScheduled mstate = "scheduled"
	mDead      mstate = "dead"
	mGone      mstate = "gone"
)

// mtask is the model's view of one task.
type mtask struct {
	id, token, worker string
	level             int
	state             mstate
	preemptible       bool
	due, deadline     int64 // ms: when scheduled becomes due / lease expires
}

// model predicts exactly what the queue holds: every level list in order,
// which task is where, and which token is valid.
type model struct {
	e     *env
	tasks map[string]*mtask
	lists [][]string
	held  []held // every lease ever handed out, valid or not
}

type held struct{ id, token, worker string }

func (m *model) now() int64 { return m.e.clk.Now().UnixMilli() }

// TestModel runs random operations on random tasks and checks after each
// step that every task is in exactly one place (invariant 2), that each
// level list holds exactly the predicted IDs in the predicted order
// (invariant 5), that a token is valid exactly when the model says so, and
// that the Stats counters agree.
func TestModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		t.Logf("-model.seed=%d", seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		m := &model{e: newEnv(t, b, nil), tasks: map[string]*mtask{}, lists: make([][]string, 3)}
		for step := range *modelSteps {
			op := m.step(rng, step)
			if t.Failed() {
				t.Fatalf("step %d (%s) failed; rerun with -model.seed=%d", step, op, seed)
			}
			m.check(fmt.Sprintf("after step %d (%s), seed %d", step, op, seed))
		}
	})
}

func (m *model) step(rng *rand.Rand, step int) string {
	switch r := rng.IntN(100); {
	case r < 25 && len(m.tasks) < 60:
		m.enqueue(rng, step)
		return "enqueue"
	case r < 45:
		m.lease(rng)
		return "lease"
	case r < 80:
		return m.finish(rng)
	case r < 90:
		m.heartbeat(rng)
		return "heartbeat"
	default:
		d := time.Duration(rng.IntN(40_000)) * time.Millisecond
		m.e.clk.Advance(d)
		return "advance " + d.String()
	}
}

func (m *model) enqueue(rng *rand.Rand, step int) {
	e := m.e
	mt := &mtask{id: fmt.Sprintf("t%03d", step), level: rng.IntN(3), preemptible: rng.IntN(4) > 0}
	opts := []Option{ID(mt.id), Level(mt.level), Preemptible(mt.preemptible)}
	if rng.IntN(4) == 0 {
		d := time.Duration(rng.IntN(20)) * time.Second
		opts = append(opts, ProcessIn(d))
		mt.due = m.now() + d.Milliseconds()
	}
	e.enqueue("", opts...)
	m.tasks[mt.id] = mt
	if mt.due > m.now() {
		mt.state = mScheduled
	} else {
		mt.state = mPending
		m.lists[mt.level] = append(m.lists[mt.level], mt.id)
	}
}

// sortedBy returns the tasks in state s whose time f is at or before now,
// ordered as ZRANGEBYSCORE returns them: by score, then by member.
func (m *model) sortedBy(s mstate, f func(*mtask) int64) []*mtask {
	var out []*mtask
	for _, mt := range m.tasks {
		if mt.state == s && f(mt) <= m.now() {
			out = append(out, mt)
		}
	}
	slices.SortFunc(out, func(a, b *mtask) int { return cmp.Or(cmp.Compare(f(a), f(b)), cmp.Compare(a.id, b.id)) })
	return out
}

func (m *model) lease(rng *rand.Rand) {
	e := m.e
	w := fmt.Sprint("w", rng.IntN(3))
	count, minLevel := 1+rng.IntN(3), rng.IntN(3)
	if rng.IntN(2) == 0 {
		minLevel = 0
	}
	// Promote due scheduled tasks to the tail, recover expired leases to the head.
	for _, mt := range m.sortedBy(mScheduled, func(mt *mtask) int64 { return mt.due }) {
		mt.state = mPending
		m.lists[mt.level] = append(m.lists[mt.level], mt.id)
	}
	m.recoverExpired()
	var want []string
	for l := 2; l >= minLevel && len(want) < count; l-- {
		n := min(count-len(want), len(m.lists[l]))
		want = append(want, m.lists[l][:n]...)
		m.lists[l] = m.lists[l][n:]
	}
	res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: w, Count: count, MinLevel: minLevel})
	require.NoError(e.t, err)
	require.Empty(e.t, res.Malformed)
	require.Equal(e.t, nilIfEmpty(want), nilIfEmpty(ids(res.Tasks)), "leased tasks and their order")
	for _, tk := range res.Tasks {
		mt := m.tasks[tk.ID]
		mt.state, mt.token, mt.worker, mt.deadline = mActive, tk.Token, w, m.now()+defaultLeaseDuration.Milliseconds()
		m.held = append(m.held, held{tk.ID, tk.Token, w})
	}
}

// pick returns a lease to act on: usually a valid one, sometimes any lease
// ever handed out (most of those are stale).
func (m *model) pick(rng *rand.Rand) (held, bool) {
	var valid []held
	for _, h := range m.held {
		if mt := m.tasks[h.id]; mt.state == mActive && mt.token == h.token {
			valid = append(valid, h)
		}
	}
	switch {
	case len(valid) > 0 && rng.IntN(10) < 7:
		return valid[rng.IntN(len(valid))], true
	case len(m.held) > 0:
		return m.held[rng.IntN(len(m.held))], true
	}
	return held{}, false
}

func (m *model) finish(rng *rand.Rand) string {
	e := m.e
	h, ok := m.pick(rng)
	if !ok {
		return "finish: nothing held"
	}
	if rng.IntN(10) == 0 {
		h.token = "forged"
	}
	mt := m.tasks[h.id]
	valid := mt.state == mActive && mt.token == h.token
	tk := &Task{Info: Info{ID: h.id}, Token: h.token}
	var err error
	var apply func()
	op := []string{"ack", "retry", "kill", "requeue", "checkpoint"}[rng.IntN(5)]
	switch op {
	case "ack":
		err = e.c.Ack(e.ctx, tk)
		apply = func() { mt.state = mGone }
	case "retry":
		at := m.now() + int64(rng.IntN(10_000))
		err = e.c.Retry(e.ctx, tk, time.UnixMilli(at), "boom")
		apply = func() { mt.state, mt.due = mScheduled, at }
	case "kill":
		err = e.c.DeadLetter(e.ctx, tk, "dead")
		apply = func() { mt.state = mDead }
	case "requeue":
		err = e.c.Requeue(e.ctx, tk, []RequeueReason{RequeuePreempted, RequeueShutdown, RequeueYield}[rng.IntN(3)])
		apply = func() {
			mt.state = mPending
			m.lists[mt.level] = append([]string{mt.id}, m.lists[mt.level]...)
		}
	case "checkpoint":
		_, err = e.c.SaveCheckpoint(e.ctx, h.id, h.token, []byte(op))
		apply = func() { mt.deadline = m.now() + defaultLeaseDuration.Milliseconds() }
	}
	if !valid {
		requireLeaseLost(e.t, err)
		return op + " (stale)"
	}
	require.NoError(e.t, err)
	if op != "checkpoint" {
		mt.token, mt.worker = "", ""
	}
	apply()
	return op
}

// recoverExpired returns expired leases to the head of their level, as the
// lease and heartbeat scripts do.
func (m *model) recoverExpired() {
	for _, mt := range m.sortedBy(mActive, func(mt *mtask) int64 { return mt.deadline }) {
		mt.state, mt.token, mt.worker = mPending, "", ""
		m.lists[mt.level] = append([]string{mt.id}, m.lists[mt.level]...)
	}
}

func (m *model) heartbeat(rng *rand.Rand) {
	e := m.e
	w := fmt.Sprint("w", rng.IntN(3))
	var leases []*Task
	var wantLost []string
	for _, h := range m.held {
		mt := m.tasks[h.id]
		if h.worker != w || (mt.token != h.token && rng.IntN(3) > 0) {
			continue
		}
		leases = append(leases, &Task{Info: Info{ID: h.id}, Token: h.token})
		if mt.state == mActive && mt.token == h.token {
			mt.deadline = m.now() + defaultLeaseDuration.Milliseconds()
		} else {
			wantLost = append(wantLost, h.id)
		}
	}
	// The worker's own leases are extended first, so only others' expired
	// leases are recovered, even if its own had expired.
	m.recoverExpired()
	lost, err := lostOf(e.c.Heartbeat(e.ctx, Heartbeat{Worker: w, Capacity: 3, Leases: leases}))
	require.NoError(e.t, err)
	require.Equal(e.t, wantLost, nilIfEmpty(lost))
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// check reads every key of the queue and compares it with the model.
func (m *model) check(msg string) {
	e, t := m.e, m.e.t
	t.Helper()
	where := map[string][]string{}
	for l := range 3 {
		got := e.pending(l)
		require.Equal(t, nilIfEmpty(m.lists[l]), nilIfEmpty(got), "level %d list, %s", l, msg)
		for _, id := range got {
			where[id] = append(where[id], fmt.Sprint("p:", l))
		}
	}
	zsets := map[string]map[string]float64{}
	for _, k := range []string{"leases", "scheduled", "dead", "running"} {
		zs, err := e.rdb.ZRangeWithScores(e.ctx, e.c.keys.prefix+k, 0, -1).Result()
		require.NoError(t, err)
		zsets[k] = map[string]float64{}
		for _, z := range zs {
			id := z.Member.(string)
			if id == anchorMember && (k == "leases" || k == "running") {
				require.Equal(t, anchorScore, strconv.FormatFloat(z.Score, 'f', -1, 64), "the anchor of %s, %s", k, msg)
				continue // not a task (anchor.go)
			}
			zsets[k][id] = z.Score
			if k != "running" {
				where[id] = append(where[id], k)
			}
		}
	}
	busy := map[string]int{}
	want := make([]counts, 3)
	recs := map[string]*redis.SliceCmd{}
	_, err := e.rdb.Pipelined(e.ctx, func(p redis.Pipeliner) error {
		for id := range m.tasks {
			recs[id] = p.MGet(e.ctx, e.c.keys.task(id), e.c.keys.state(id), e.c.keys.checkpoint(id))
		}
		return nil
	})
	require.NoError(t, err)
	for id, mt := range m.tasks {
		rec := map[string]string{}
		if v := recs[id].Val(); v[0] != nil || v[1] != nil || v[2] != nil {
			tk, err := decodeTask(id, v[0], v[1], v[2])
			require.NoError(t, err)
			rec[fState], rec[fToken] = string(tk.State), tk.Token
		}
		if mt.state == mGone {
			require.Empty(t, rec, "record of acked %s, %s", id, msg)
			require.Empty(t, where[id], "acked %s, %s", id, msg)
			continue
		}
		require.Len(t, where[id], 1, "task %s (%s) must be in exactly one place, %s", id, mt.state, msg)
		place, c := where[id][0], &want[mt.level]
		switch mt.state {
		case mPending:
			c.Pending++
			require.Equal(t, fmt.Sprint("p:", mt.level), place, "%s, %s", id, msg)
			require.Equal(t, "pending", rec[fState], "%s, %s", id, msg)
		case mActive:
			c.Active++
			busy[mt.worker]++
			require.Equal(t, "leases", place, "%s, %s", id, msg)
			require.Equal(t, "active", rec[fState], "%s, %s", id, msg)
			require.Equal(t, mt.token, rec[fToken], "the one valid token of %s, %s", id, msg)
			require.Equal(t, float64(mt.deadline), zsets["leases"][id], "deadline of %s, %s", id, msg)
			// The fleet's victims: preemptible tasks below the top level
			// (no task is above it, so none of its tasks is ever a victim).
			if mt.preemptible && mt.level < 2 {
				require.Contains(t, zsets["running"], id, "%s, %s", id, msg)
			} else {
				require.NotContains(t, zsets["running"], id, "%s, %s", id, msg)
			}
		case mScheduled:
			c.Scheduled++
			require.Equal(t, "scheduled", place, "%s, %s", id, msg)
			require.Contains(t, []string{"scheduled", "retry"}, rec[fState], "%s, %s", id, msg)
			require.Equal(t, float64(mt.due), zsets["scheduled"][id], "due of %s, %s", id, msg)
		case mDead:
			c.Dead++
			require.Equal(t, "dead", place, "%s, %s", id, msg)
			require.Equal(t, "dead", rec[fState], "%s, %s", id, msg)
		}
		if mt.state != mActive {
			require.Empty(t, rec[fToken], "no token outside a lease: %s, %s", id, msg)
			require.NotContains(t, zsets["running"], id, "%s, %s", id, msg)
		}
	}
	for id := range where {
		require.Contains(t, m.tasks, id, "unknown ID in the queue, %s", msg)
	}
	require.Equal(t, want, e.levelCounts(), "Stats, %s", msg)
	gotBusy := map[string]int{}
	for w, n := range e.rdb.HGetAll(e.ctx, e.c.keys.busy()).Val() {
		v, err := strconv.Atoi(n)
		require.NoError(t, err)
		if v != 0 {
			gotBusy[w] = v
		}
	}
	require.Equal(t, busy, gotBusy, "leases per worker, %s", msg)
}

// Fields of the decoded record that model.check compares.
const (
	fState = "state"
	fToken = "tok"
)
