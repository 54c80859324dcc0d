package store

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// plant replaces key with a value of another type than the queue uses.
func (e *env) plant(key, typ string) {
	e.t.Helper()
	require.NoError(e.t, e.rdb.Del(e.ctx, key).Err())
	switch typ {
	case "string":
		require.NoError(e.t, e.rdb.Set(e.ctx, key, "oops", 0).Err())
	case "hash":
		require.NoError(e.t, e.rdb.HSet(e.ctx, key, "oops", "1").Err())
	case "list":
		require.NoError(e.t, e.rdb.RPush(e.ctx, key, "oops").Err())
	}
}

func requireCorrupt(t testing.TB, err error, key string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrCorrupt), "want ErrCorrupt, got %v", err)
	require.Contains(t, err.Error(), key)
}

// A wrong-typed shared key makes lease and ack fail closed: the error names
// the key, nothing changes, and once the key is fixed every task goes on.
// (Redis does not roll back a failed script: the first edition released a
// lease before the command that failed and lost the task.)
func TestCorruptSharedKeyFailsClosed(t *testing.T) {
	withCorruptSharedKey(t, func(t *testing.T, e *env, a *Task, key string) {
		_, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 2})
		requireCorrupt(t, err, key)
		require.Equal(t, []string{"b"}, e.pending(1), "b is still pending")
		requireCorrupt(t, e.c.Ack(e.ctx, a), key)
		require.Equal(t, StateActive, e.inspect("a").State, "a keeps its lease")
		require.Equal(t, a.Token, e.inspect("a").Token)
	})
}

// A reservation that skips the fleet check (IgnoreFleet) for an urgent
// task at the top level, which the running set leaves out, still checks
// running before its first write: a wrong-typed running set fails the call
// closed (the urgent task stays pending, no count moves) instead of
// failing on the victim's removal after the lease was written.
func TestReserveIgnoringFleetCorruptRunningFailsClosed(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.run("w1", "v", 1)
		e.enqueue("", ID("u"), Level(2))
		key := e.c.keys.running()
		require.NoError(t, e.rdb.Rename(e.ctx, key, key+".saved").Err())
		e.plant(key, "hash")
		req := ReserveRequest{Worker: "w1", VictimID: "v", VictimLevel: 1, MinLevel: 2, MaxPreemptions: -1, IgnoreFleet: true}
		_, _, err := e.c.Reserve(e.ctx, req)
		requireCorrupt(t, err, key)
		require.Equal(t, []string{"u"}, e.pending(2), "u is still pending")
		require.Equal(t, "1", e.rdb.HGet(e.ctx, e.c.keys.busy(), "w1").Val(), "no count moved")
		e.requireCounts(counts{}, counts{Active: 1}, counts{Pending: 1})

		require.NoError(t, e.rdb.Rename(e.ctx, key+".saved", key).Err())
		got, _, err := e.c.Reserve(e.ctx, req)
		require.NoError(t, err)
		require.Equal(t, "u", got.ID)
	})
}

// withCorruptSharedKey runs check, on each backend and for each shared key
// (leases, running, busy, n), with task a leased by worker "w", task b
// pending at level 1 and the key holding the wrong type; then the operator
// restores the key, and a's ack and b's lease go on with the counts right.
func withCorruptSharedKey(t *testing.T, check func(t *testing.T, e *env, a *Task, key string)) {
	cases := []struct{ suffix, plant string }{
		{"leases", "string"}, {"running", "hash"}, {"busy", "string"}, {"n", "list"},
	}
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, tc := range cases {
			t.Run(tc.suffix, func(t *testing.T) {
				e := newEnv(t, b, nil)
				e.enqueue("", ID("a"), Level(1))
				a := e.leaseOne("w")
				e.enqueue("", ID("b"), Level(1))
				key := e.c.keys.prefix + tc.suffix
				require.NoError(t, e.rdb.Rename(e.ctx, key, key+".saved").Err())
				e.plant(key, tc.plant)

				check(t, e, a, key)

				// The operator restores the key: everything goes on.
				require.NoError(t, e.rdb.Rename(e.ctx, key+".saved", key).Err())
				require.NoError(t, e.c.Ack(e.ctx, a))
				require.Equal(t, []string{"b"}, ids(e.lease("w", 2)))
				e.requireCounts(counts{}, counts{Active: 1})
			})
		}
	})
}

// A wrong-typed level list is skipped and reported; the other levels are
// leased as usual.
func TestCorruptLevelListIsSkipped(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("low"), Level(0))
		e.plant(e.c.keys.pending(2), "hash")
		e.enqueue("", ID("mid"), Level(1))
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 5})
		require.NoError(t, err)
		require.Equal(t, []string{"mid", "low"}, ids(res.Tasks))
		require.Len(t, res.Corrupt, 1)
		requireCorrupt(t, res.Corrupt[0], e.c.keys.pending(2))
		_, err = e.c.Enqueue(e.ctx, NewTask("t", nil), ID("high"), Level(2))
		requireCorrupt(t, err, e.c.keys.pending(2))
		e.gone("high") // the refused enqueue left no record behind
	})
}

// A task key of the wrong type is set aside (renamed, its ID kept) and
// dead-lettered; the good task behind it is leased in the same call.
func TestCorruptTaskKeyIsSetAside(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.enqueue("", ID("bad"), Level(1))
		e.enqueue("", ID("good"), Level(1))
		e.plant(e.c.keys.task("bad"), "hash")
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 1})
		require.NoError(t, err)
		require.Equal(t, []string{"good"}, ids(res.Tasks), "no lease is wasted on the bad key")
		require.Len(t, res.Corrupt, 1)
		requireCorrupt(t, res.Corrupt[0], e.c.keys.task("bad"))
		require.Len(t, res.SetAside, 1, "the set-aside task is reported to the caller")
		require.Equal(t, "bad", res.SetAside[0].ID)
		require.Equal(t, 1, res.SetAside[0].Level)
		requireCorrupt(t, res.SetAside[0].Err, e.c.keys.task("bad"))
		require.Equal(t, []string{"bad"}, e.zset(e.c.keys.dead()))
		e.requireCounts(counts{}, counts{Active: 1, Dead: 1}) // dead at its own level, not at 0
		rec, err := e.c.Inspect(e.ctx, "bad")
		require.ErrorIs(t, err, ErrMalformedRecord)
		require.Equal(t, StateDead, rec.State)
		require.Equal(t, 1, rec.Level)
		require.Contains(t, rec.LastError, "corrupt record")
		require.Equal(t, "hash", e.rdb.Type(e.ctx, e.c.keys.prefix+"x:bad").Val(), "kept for the operator")
		require.NoError(t, e.c.DeleteDead(e.ctx, "bad"))
		require.Zero(t, e.rdb.Exists(e.ctx, e.c.keys.prefix+"x:bad").Val())
		e.requireCounts(counts{}, counts{Active: 1})

		// A wrong-typed state of a leased task: its ack fails closed.
		good := res.Tasks[0]
		e.plant(e.c.keys.state("good"), "list")
		requireCorrupt(t, e.c.Ack(e.ctx, good), e.c.keys.state("good"))
	})
}

// Leases, liveness and schedules run on Redis's clock: a worker whose own
// clock is a minute ahead (beyond the 30 s lease) recovers nothing that
// another worker holds, and its delays are Redis's.
func TestSkewedClientClockChangesNothing(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		ns := b.Prefix + ".skew"
		honest, err := New(b.Client, Config{Namespace: ns})
		require.NoError(t, err)
		skewed, err := New(b.Client, Config{Namespace: ns, Clock: func() time.Time { return time.Now().Add(time.Minute) }})
		require.NoError(t, err)
		skewed.serverTime = true // its clock is only its own: Redis's drives the scripts
		e := &env{t: t, ctx: t.Context(), rdb: b.Client, c: honest}

		_, err = honest.Enqueue(e.ctx, NewTask("t", nil), ID("a"))
		require.NoError(t, err)
		res, err := honest.Lease(e.ctx, LeaseRequest{Worker: "w1"})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		a := res.Tasks[0]
		require.WithinDuration(t, time.Now().Add(defaultLeaseDuration), a.LeaseDeadline, 5*time.Second)

		skewed.sweep.next.Store(0)
		got, err := skewed.Lease(e.ctx, LeaseRequest{Worker: "w2"})
		require.NoError(t, err)
		require.Empty(t, got.Tasks, "the skewed worker recovered a lease that is still valid")
		lost, err := lostOf(skewed.Heartbeat(e.ctx, Heartbeat{Worker: "w2", Capacity: 1}))
		require.NoError(t, err)
		require.Empty(t, lost)
		require.Equal(t, a.Token, e.inspect("a").Token)

		_, err = skewed.Enqueue(e.ctx, NewTask("t", nil), ID("later"), ProcessIn(2*time.Second))
		require.NoError(t, err)
		due := time.UnixMilli(int64(e.score(honest.keys.scheduled(), "later")))
		require.WithinDuration(t, time.Now().Add(2*time.Second), due, time.Second, "due by Redis's clock")
		require.NoError(t, honest.Ack(e.ctx, a))
	})
}

// Namespace and name are escaped: pairs that would spell the same key
// prefix stay apart.
func TestQueueNamesCannotCollide(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		pairs := [][2]string{{"billing:eu", "jobs"}, {"billing", "eu:jobs"}, {"billing:eu:jobs", ""}, {"b{x}", "y"}, {"b", "x}:{y"}}
		seen := map[string]bool{}
		var clients []*Store
		for _, p := range pairs {
			c, err := New(b.Client, Config{Namespace: b.Prefix + p[0], Name: p[1]})
			require.NoError(t, err)
			require.False(t, seen[c.keys.prefix], "%q shares keys", p)
			seen[c.keys.prefix] = true
			clients = append(clients, c)
		}
		ctx := t.Context()
		_, err := clients[0].Enqueue(ctx, NewTask("t", nil), ID("x"))
		require.NoError(t, err)
		for _, c := range clients[1:] {
			res, err := c.Lease(ctx, LeaseRequest{Worker: "w"})
			require.NoError(t, err)
			require.Empty(t, res.Tasks, "%s leased another queue's task", c.keys.prefix)
		}
	})
}

// A worker that finds data of another schema version refuses with an error
// naming both versions.
func TestSchemaVersionChecked(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		e.beat("w", 1, 0)
		require.Equal(t, "2", e.rdb.Get(e.ctx, e.c.keys.version()).Val(), "a new queue records its schema")

		require.NoError(t, e.rdb.Set(e.ctx, e.c.keys.version(), "3", 0).Err())
		_, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1})
		require.ErrorIs(t, err, ErrSchema)
		require.Contains(t, err.Error(), "schema version 3; this worker reads version 2")

		// A queue of the first edition (no version key, its counters hash).
		old := newEnv(t, b, nil)
		require.NoError(t, old.rdb.HSet(old.ctx, old.c.keys.prefix+"cnt", "a0", 1).Err())
		_, err = old.c.Heartbeat(old.ctx, Heartbeat{Worker: "w", Capacity: 1})
		require.ErrorIs(t, err, ErrSchema)
		require.Contains(t, err.Error(), "schema version 1")
	})
}

// The keys only the rarer transitions write fail closed too: the call that
// would write them returns ErrCorrupt naming the key, and the task keeps
// its lease, so nothing is lost.
func TestCorruptRareKeysFailClosed(t *testing.T) {
	cases := []struct {
		suffix, plant string
		mutate        func(*Config)
		call          func(e *env, tk *Task) error
	}{
		{"scheduled", "string", nil, func(e *env, tk *Task) error { return e.c.Retry(e.ctx, tk, e.clk.Now(), "x") }},
		{"dead", "hash", nil, func(e *env, tk *Task) error { return e.c.DeadLetter(e.ctx, tk, "x") }},
		{"done", "list", func(c *Config) { c.Retention = time.Minute }, func(e *env, tk *Task) error { return e.c.Ack(e.ctx, tk) }},
		{"p:1", "hash", nil, func(e *env, tk *Task) error { return e.c.Requeue(e.ctx, tk, RequeuePreempted) }},
		{"alive", "string", nil, func(e *env, tk *Task) error {
			_, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1, Leases: []*Task{tk}})
			return err
		}},
		{"cap", "list", nil, func(e *env, tk *Task) error {
			_, err := e.c.Heartbeat(e.ctx, Heartbeat{Worker: "w", Capacity: 1, Leases: []*Task{tk}})
			return err
		}},
		{"leases", "hash", nil, func(e *env, tk *Task) error {
			_, err := e.c.SaveCheckpoint(e.ctx, tk.ID, tk.Token, []byte("cp"))
			return err
		}},
	}
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		for _, tc := range cases {
			t.Run(tc.suffix, func(t *testing.T) {
				e := newEnv(t, b, tc.mutate)
				e.enqueue("", ID("a"), Level(1))
				tk := e.leaseOne("w")
				key := e.c.keys.prefix + tc.suffix
				if n, _ := e.rdb.Exists(e.ctx, key).Result(); n == 1 {
					require.NoError(t, e.rdb.Rename(e.ctx, key, key+".saved").Err())
				}
				e.plant(key, tc.plant)
				requireCorrupt(t, tc.call(e, tk), key)
				require.NoError(t, e.rdb.Del(e.ctx, key).Err())
				if n, _ := e.rdb.Exists(e.ctx, key+".saved").Result(); n == 1 {
					require.NoError(t, e.rdb.Rename(e.ctx, key+".saved", key).Err())
				}
				rec := e.inspect("a")
				require.Equal(t, StateActive, rec.State, "the task keeps its lease")
				require.Equal(t, tk.Token, rec.Token)
				require.NoError(t, tc.call(e, tk), "once the key is fixed")
			})
		}
	})
}
