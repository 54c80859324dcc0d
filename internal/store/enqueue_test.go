package store

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

func TestEnqueueDefaults(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		now := e.clk.Now()
		got, err := e.c.Enqueue(e.ctx, NewTask("email", []byte("hi")))
		require.NoError(t, err)
		require.Len(t, got.ID, 32)
		require.Equal(t, StatePending, got.State)
		require.Equal(t, 0, got.Level)

		rec := e.inspect(got.ID)
		require.Equal(t, got.ID, rec.ID)
		require.Equal(t, "email", rec.Type)
		require.Equal(t, []byte("hi"), rec.Payload)
		require.Equal(t, StatePending, rec.State)
		require.Equal(t, 0, rec.Level)
		require.Equal(t, DefaultMaxRetries, rec.MaxRetries)
		require.False(t, rec.NotPreemptible)
		require.Zero(t, rec.Attempt)
		require.Zero(t, rec.Preemptions)
		require.Zero(t, rec.Timeout)
		require.Nil(t, rec.Checkpoint)
		require.Empty(t, rec.Token)
		require.True(t, rec.EnqueuedAt.Equal(now), "EnqueuedAt %v, want %v", rec.EnqueuedAt, now)
		require.True(t, rec.ReadyAt.Equal(now))
		require.Equal(t, []string{got.ID}, e.pending(0))
		e.requireCounts(counts{Pending: 1})
		st := e.stats()
		require.Equal(t, "q", st.Queue)
		require.Equal(t, []string{"low", "normal", "high"}, []string{st.Levels[0].Name, st.Levels[1].Name, st.Levels[2].Name})
		require.True(t, st.Levels[0].OldestReadyAt.Equal(now))
		require.True(t, st.Levels[1].OldestReadyAt.IsZero())
	})
}

func TestEnqueueOptionsRoundTrip(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		hdr := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
		e.enqueue("p", ID("job-1"), MaxRetries(3), Timeout(1500*time.Millisecond), Preemptible(false), Headers(hdr), Level(1))
		for _, got := range []*Task{e.inspect("job-1"), e.leaseOne("w")} {
			require.Equal(t, "job-1", got.ID)
			require.Equal(t, 3, got.MaxRetries)
			require.Equal(t, 1500*time.Millisecond, got.Timeout)
			require.True(t, got.NotPreemptible)
			require.Equal(t, hdr, got.Headers)
			require.Equal(t, 1, got.Level)
		}
	})
}

func TestEnqueueLevels(t *testing.T) {
	cases := []struct {
		name  string
		task  *Task
		opts  []Option
		level int
		class string
	}{
		{"default", NewTask("t", nil), nil, 0, ""},
		{"number", NewTask("t", nil), []Option{Level(2)}, 2, ""},
		{"task field", &Task{Info: Info{Type: "t", Level: 1}}, nil, 1, ""},
		{"name", NewTask("t", nil), []Option{LevelNamed("high")}, 2, ""},
		{"name as number", NewTask("t", nil), []Option{LevelNamed("1")}, 1, ""},
		{"class", NewTask("t", nil), []Option{Class("paying")}, 2, "paying"},
		{"class free", NewTask("t", nil), []Option{Class("free")}, 0, "free"},
		{"last option wins", NewTask("t", nil), []Option{Level(2), Level(1)}, 1, ""},
	}
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, func(c *Config) { c.Classes = map[string]int{"paying": 2, "free": 0} })
				got, err := e.c.Enqueue(e.ctx, tc.task, tc.opts...)
				require.NoError(t, err)
				require.Equal(t, tc.level, got.Level)
				rec := e.inspect(got.ID)
				require.Equal(t, tc.level, rec.Level)
				require.Equal(t, tc.class, rec.Class)
				require.Equal(t, []string{got.ID}, e.pending(tc.level))
			})
		}
	})
}

func TestEnqueueInvalid(t *testing.T) {
	cases := []struct {
		name string
		task *Task
		opts []Option
		want error
	}{
		{"level too high", NewTask("t", nil), []Option{Level(3)}, ErrInvalidLevel},
		{"negative level", NewTask("t", nil), []Option{Level(-1)}, ErrInvalidLevel},
		{"task field out of range", &Task{Info: Info{Type: "t", Level: 7}}, nil, ErrInvalidLevel},
		{"unknown level name", NewTask("t", nil), []Option{LevelNamed("urgent")}, ErrInvalidLevel},
		{"number out of range", NewTask("t", nil), []Option{LevelNamed("3")}, ErrInvalidLevel},
		{"unknown class", NewTask("t", nil), []Option{Class("gold")}, ErrInvalidLevel},
		{"no type", NewTask("", nil), nil, ErrInvalidTask},
		{"nil task", nil, nil, ErrInvalidTask},
		{"empty ID", NewTask("t", nil), []Option{ID("")}, ErrInvalidTask},
		{"negative retries", NewTask("t", nil), []Option{MaxRetries(-1)}, ErrInvalidTask},
		{"negative timeout", NewTask("t", nil), []Option{Timeout(-time.Second)}, ErrInvalidTask},
		{"payload too large", NewTask("t", make([]byte, 65)), nil, ErrPayloadTooLarge},
	}
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, func(c *Config) { c.MaxPayloadBytes = 64 })
				_, err := e.c.Enqueue(e.ctx, tc.task, append(tc.opts, ID("x"))...)
				require.ErrorIs(t, err, tc.want)
				e.gone("x")
				e.requireNoKeys()
			})
		}
	})
}

// requireNoKeys asserts that nothing was written for the queue but its
// shape, which the queue's first call records.
func (e *env) requireNoKeys() {
	e.t.Helper()
	var keys []string
	it := e.rdb.Scan(e.ctx, 0, e.c.keys.prefix+"*", 1000).Iterator()
	for it.Next(e.ctx) {
		if it.Val() != e.c.keys.shape() {
			keys = append(keys, it.Val())
		}
	}
	require.NoError(e.t, it.Err())
	require.Empty(e.t, keys)
}

func TestEnqueuePayloadLimit(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.MaxPayloadBytes = 10 })
		e.enqueue(strings.Repeat("a", 10), ID("fits"))
		_, err := e.c.Enqueue(e.ctx, NewTask("t", make([]byte, 11)), ID("big"))
		require.ErrorIs(t, err, ErrPayloadTooLarge)
		e.gone("big")
		require.Equal(t, []string{"fits"}, e.pending(0))

		unlimited := newEnv(t, b, func(c *Config) { c.MaxPayloadBytes = -1 })
		unlimited.enqueue(strings.Repeat("a", defaultMaxPayloadBytes+1), ID("huge"))
		require.Len(t, unlimited.inspect("huge").Payload, defaultMaxPayloadBytes+1)
	})
}

func TestEnqueueDuplicateID(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("first", ID("dup"), Level(1))
		before := e.inspect("dup")
		for _, opts := range [][]Option{{ID("dup"), Level(1)}, {ID("dup"), Level(2)}, {ID("dup"), ProcessIn(time.Hour)}} {
			_, err := e.c.Enqueue(e.ctx, NewTask("t", []byte("second")), opts...)
			require.ErrorIs(t, err, ErrDuplicateTask)
		}
		require.Equal(t, before, e.inspect("dup"))
		require.Equal(t, []string{"dup"}, e.pending(1))
		e.requireCounts(counts{}, counts{Pending: 1})

		// Still a duplicate while leased.
		e.leaseOne("w")
		_, err := e.c.Enqueue(e.ctx, NewTask("t", nil), ID("dup"))
		require.ErrorIs(t, err, ErrDuplicateTask)
	})
}

func TestEnqueueScheduled(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		due := e.clk.Now().Add(10 * time.Second)
		got := e.enqueue("later", ID("s"), ProcessIn(10*time.Second), Level(2))
		require.Equal(t, StateScheduled, got.State)
		rec := e.inspect("s")
		require.Equal(t, StateScheduled, rec.State)
		require.True(t, rec.ProcessAt.Equal(due))
		e.requireCounts(counts{}, counts{}, counts{Scheduled: 1})

		e.clk.Advance(10*time.Second - time.Millisecond)
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w"})
		require.NoError(t, err)
		require.Empty(t, res.Tasks)
		require.True(t, res.NextDue.Equal(due), "NextDue %v, want %v", res.NextDue, due)
		require.Empty(t, e.pending(2))

		e.clk.Advance(time.Millisecond)
		leased := e.leaseOne("w")
		require.Equal(t, "s", leased.ID)
		require.Equal(t, StateActive, leased.State)
		require.True(t, leased.ReadyAt.Equal(due))
		e.requireCounts(counts{}, counts{}, counts{Active: 1})

		// A process-at in the past is pending at once.
		e.enqueue("now", ID("past"), ProcessAt(e.clk.Now().Add(-time.Hour)))
		require.Equal(t, []string{"past"}, e.pending(0))
	})
}

func TestEnqueuePublishesWake(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		sub := e.rdb.Subscribe(e.ctx, e.c.WakeChannel())
		defer sub.Close()
		_, err := sub.Receive(e.ctx) // subscription confirmed
		require.NoError(t, err)
		e.enqueue("x", Level(2))
		msg, err := sub.ReceiveMessage(e.ctx)
		require.NoError(t, err)
		require.Equal(t, "2", msg.Payload)
	})
}

func TestEnqueueBatch(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("old", ID("exists"), Level(1))
		require.NoError(t, enqueueManyScript.Load(e.ctx, e.rdb).Err()) // else the first call meets NOSCRIPT
		hk := &countHook{}
		e.rdb.AddHook(hk)

		tasks := []*Task{
			{Info: Info{ID: "a", Type: "t"}},
			{Info: Info{ID: "exists", Type: "t"}},
			{Info: Info{ID: "b", Type: "t"}},
			{Info: Info{ID: "b", Type: "t", Payload: []byte("again")}},
			{Info: Info{ID: "notype"}},
			{Info: Info{ID: "c", Type: "t", ProcessAt: e.clk.Now().Add(time.Minute)}}}
		out, err := e.c.EnqueueBatch(e.ctx, tasks, Level(1))
		require.Equal(t, int64(1), hk.pipelines.Load(), "one pipeline")
		require.Zero(t, hk.singles.Load(), "no script call outside the pipeline")
		require.Error(t, err)
		require.ErrorIs(t, err, ErrDuplicateTask)
		require.ErrorIs(t, err, ErrInvalidTask)
		require.Contains(t, err.Error(), `"exists"`)
		require.Len(t, out, len(tasks))
		require.Equal(t, []bool{true, false, true, false, false, true},
			[]bool{out[0] != nil, out[1] != nil, out[2] != nil, out[3] != nil, out[4] != nil, out[5] != nil})
		require.Equal(t, []string{"exists", "a", "b"}, e.pending(1))
		require.Empty(t, e.inspect("b").Payload)
		require.Equal(t, StateScheduled, e.inspect("c").State)
		e.requireCounts(counts{}, counts{Pending: 3, Scheduled: 1})
	})
}

// TestEnqueueBatchUnloadedScript runs a batch on servers that never saw the
// script (NOSCRIPT fallback). The real server is a dedicated one: flushing
// the shared server's scripts would disturb other tests.
func TestEnqueueBatchUnloadedScript(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		if !b.IsMini() {
			b.Client = testredis.StartServer(t, testredis.ServerOptions{}).NewClient(t)
		}
		e := newEnv(t, b, nil)
		require.NoError(t, e.rdb.ScriptFlush(e.ctx).Err())
		out, err := e.c.EnqueueBatch(e.ctx, []*Task{NewTask("t", nil), NewTask("t", nil)})
		require.NoError(t, err)
		require.Equal(t, ids(out), e.pending(0))

		empty, err := e.c.EnqueueBatch(e.ctx, nil)
		require.NoError(t, err)
		require.Empty(t, empty)
	})
}

// countHook counts the script calls a client sends alone and the pipelines
// of script calls (connection set-up is not counted).
type countHook struct{ singles, pipelines atomic.Int64 }

func isScript(cmd redis.Cmder) bool {
	n := strings.ToLower(cmd.Name())
	return n == "eval" || n == "evalsha"
}

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScript(cmd) {
			h.singles.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isScript(cmds[0]) {
			h.pipelines.Add(1)
		}
		return next(ctx, cmds)
	}
}

// MaxRetries means the same on the option, on a Task and in the stored
// record: the retry budget, 0 for none. NewTask starts from
// DefaultMaxRetries; a stored value reads back as it is, so a task read
// back and enqueued again keeps its budget; a negative one is refused.
func TestMaxRetriesReadsBackAsStored(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		def, err := e.c.Enqueue(e.ctx, NewTask("x", nil))
		require.NoError(t, err)
		got := e.inspect(def.ID)
		require.Equal(t, DefaultMaxRetries, got.MaxRetries)
		require.False(t, got.NotPreemptible)
		none, err := e.c.Enqueue(e.ctx, NewTask("x", nil), MaxRetries(0), Preemptible(false))
		require.NoError(t, err)
		require.Zero(t, none.MaxRetries)
		got = e.inspect(none.ID)
		require.Zero(t, got.MaxRetries)
		require.False(t, got.RetriesLeft(), "no retries: the first failure dead-letters")
		require.True(t, got.NotPreemptible)
		again, err := e.c.Enqueue(e.ctx, got, ID("copy")) // a task read back keeps its meaning
		require.NoError(t, err)
		require.Zero(t, e.inspect(again.ID).MaxRetries)
		lit, err := e.c.Enqueue(e.ctx, &Task{Info: Info{Type: "x", MaxRetries: 3}})
		require.NoError(t, err)
		require.Equal(t, 3, e.inspect(lit.ID).MaxRetries)
		_, err = e.c.Enqueue(e.ctx, &Task{Info: Info{Type: "x", MaxRetries: -1}})
		require.ErrorIs(t, err, ErrInvalidTask)
		_, err = e.c.Enqueue(e.ctx, NewTask("x", nil), MaxRetries(-1))
		require.ErrorIs(t, err, ErrInvalidTask)
	})
}
