package store

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

// fakeClock is the Config.Clock of every test: time moves only when a test
// says so, so lease expiry, retries and scheduling need no sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_750_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one queue, in its own namespace, on one backend.
type env struct {
	t   testing.TB
	ctx context.Context
	rdb redis.UniversalClient
	c   *Store
	clk *fakeClock
}

var nsSeq atomic.Int64

// newEnv returns a fresh queue on b in a namespace of its own, so that tests
// can share one real Redis. mutate adjusts the config before New.
func newEnv(t testing.TB, b testredis.Backend, mutate func(*Config)) *env {
	t.Helper()
	return newEnvOn(t, b.Client, b.Prefix+"."+strconv.FormatInt(nsSeq.Add(1), 10), mutate)
}

func newEnvOn(t testing.TB, rdb redis.UniversalClient, ns string, mutate func(*Config)) *env {
	t.Helper()
	clk := newFakeClock()
	cfg := Config{Namespace: ns, Name: "q", Clock: clk.Now}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(rdb, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &env{t: t, ctx: ctx, rdb: rdb, c: c, clk: clk}
}

// enqueue enqueues a task of type "t" with payload p and fails on error.
func (e *env) enqueue(p string, opts ...Option) *Task {
	e.t.Helper()
	t, err := e.c.Enqueue(e.ctx, NewTask("t", []byte(p)), opts...)
	require.NoError(e.t, err)
	return t
}

// lease leases up to n tasks for worker w and requires no malformed ones.
func (e *env) lease(w string, n int) []*Task {
	e.t.Helper()
	res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: w, Count: n})
	require.NoError(e.t, err)
	require.Empty(e.t, res.Malformed)
	return res.Tasks
}

// leaseOne leases exactly one task.
func (e *env) leaseOne(w string) *Task {
	e.t.Helper()
	ts := e.lease(w, 1)
	require.Len(e.t, ts, 1)
	return ts[0]
}

func (e *env) inspect(id string) *Task {
	e.t.Helper()
	t, err := e.c.Inspect(e.ctx, id)
	require.NoError(e.t, err)
	return t
}

func (e *env) gone(id string) {
	e.t.Helper()
	_, err := e.c.Inspect(e.ctx, id)
	require.ErrorIs(e.t, err, ErrTaskNotFound)
}

func (e *env) pending(level int) []string {
	e.t.Helper()
	ids, err := e.c.Pending(e.ctx, level)
	require.NoError(e.t, err)
	return ids
}

func (e *env) stats() *Stats {
	e.t.Helper()
	st, err := e.c.Stats(e.ctx)
	require.NoError(e.t, err)
	return st
}

// zset returns the members of one of the queue's sorted sets, but the
// anchor of the lease sets (anchor.go).
func (e *env) zset(key string) []string {
	e.t.Helper()
	ids, err := e.rdb.ZRangeByScore(e.ctx, key, &redis.ZRangeBy{Min: "-inf", Max: belowAnchor}).Result()
	require.NoError(e.t, err)
	return ids
}

func (e *env) score(key, id string) float64 {
	e.t.Helper()
	s, err := e.rdb.ZScore(e.ctx, key, id).Result()
	require.NoError(e.t, err)
	return s
}

// setRecord overwrites a task's record directly, to corrupt it.
func (e *env) setRecord(id, raw string) {
	e.t.Helper()
	require.NoError(e.t, e.rdb.Set(e.ctx, e.c.keys.task(id), raw, 0).Err())
}

// patchState sets (or, with val "", removes) one field of a task's state
// directly, to corrupt it.
func (e *env) patchState(id, field, val string) {
	e.t.Helper()
	m := map[string]string{}
	if raw, err := e.rdb.Get(e.ctx, e.c.keys.state(id)).Result(); err == nil {
		require.NoError(e.t, json.Unmarshal([]byte(raw), &m))
	}
	if val == "" {
		delete(m, field)
	} else {
		m[field] = val
	}
	b, err := json.Marshal(m)
	require.NoError(e.t, err)
	require.NoError(e.t, e.rdb.Set(e.ctx, e.c.keys.state(id), b, 0).Err())
}

// counts is one level's Stats counters.
type counts struct{ Pending, Active, Scheduled, Dead int64 }

func (e *env) levelCounts() []counts {
	e.t.Helper()
	var out []counts
	for _, l := range e.stats().Levels {
		out = append(out, counts{l.Pending, l.Active, l.Scheduled, l.Dead})
	}
	return out
}

// requireCounts asserts the Stats counters of every level.
func (e *env) requireCounts(want ...counts) {
	e.t.Helper()
	full := make([]counts, e.c.Levels())
	copy(full, want)
	require.Equal(e.t, full, e.levelCounts())
}

// stale returns a copy of t with another token.
func stale(t *Task, tok string) *Task {
	c := *t
	c.Token = tok
	return &c
}

// requireLeaseLost asserts that err is ErrLeaseLost.
func requireLeaseLost(t testing.TB, err error) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrLeaseLost), "want ErrLeaseLost, got %v", err)
}

// parallelBackends runs fn on every backend, the test and its subtests in
// parallel.
func parallelBackends(t *testing.T, fn func(t *testing.T, b testredis.Backend)) {
	t.Parallel()
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		t.Parallel()
		fn(t, b)
	})
}

func ids(ts []*Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// lostOf returns the lost leases of a heartbeat's reply.
func lostOf(r *HeartbeatReply, err error) ([]string, error) {
	if r == nil {
		return nil, err
	}
	return r.Lost, err
}
