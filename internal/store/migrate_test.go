package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// TestScriptsWhileSlotMigrates puts the queue's slot half-moved on a real
// three-master cluster (the records t:<id> on the target, every other key
// still on the source, as MIGRATE leaves them between two batches) and
// runs every kind of script but the enqueue ones against it: each call must
// be applied whole or refused whole (TRYAGAIN) with no key changed on
// either master. Once the migration finishes, the refused calls are made
// again and the counts of Stats must be exact. Scripts that build
// undeclared keys from their prefix fail here: Redis refuses one command
// part-way through, after earlier writes landed.
func TestScriptsWhileSlotMigrates(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Redis Cluster")
	}
	t.Parallel()
	cl := testredis.StartCluster(t)
	cc := cl.NewClient(t).(*redis.ClusterClient)
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := newEnvOn(t, cc, "mg"+hex.EncodeToString(b[:]), nil)
	slot := int(cc.ClusterKeySlot(e.ctx, e.c.keys.leases()).Val())

	// Before the migration: x and y dead at level 2, a..f leased by w1 at
	// level 0, h and i pending, s scheduled, w3 registered.
	e.beat("w1", 8, 0)
	e.beat("w3", 1, 0)
	e.enqueue("", ID("x"), Level(2))
	e.enqueue("", ID("y"), Level(2))
	for _, tk := range e.lease("w1", 2) {
		require.NoError(t, e.c.DeadLetter(e.ctx, tk, "bad"))
	}
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		e.enqueue("", ID(id))
	}
	held := map[string]*Task{}
	for _, tk := range e.lease("w1", 6) {
		held[tk.ID] = tk
	}
	require.Len(t, held, 6)
	e.enqueue("", ID("h"))
	e.enqueue("", ID("i"))
	e.enqueue("", ID("s"), ProcessIn(time.Hour))

	ops := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"ack", func(ctx context.Context) error { return e.c.Ack(ctx, held["a"]) }},
		{"retry", func(ctx context.Context) error { return e.c.Retry(ctx, held["b"], e.clk.Now().Add(time.Hour), "boom") }},
		{"dead letter", func(ctx context.Context) error { return e.c.DeadLetter(ctx, held["c"], "bad") }},
		{"requeue", func(ctx context.Context) error { return e.c.Requeue(ctx, held["d"], RequeuePreempted) }},
		{"checkpoint", func(ctx context.Context) error {
			_, err := e.c.SaveCheckpoint(ctx, "e", held["e"].Token, []byte("cp"))
			return err
		}},
		{"heartbeat", func(ctx context.Context) error {
			_, err := e.c.Heartbeat(ctx, Heartbeat{Worker: "w1", Capacity: 8, Leases: []*Task{held["e"], held["f"]},
				Counts: map[int]LevelCounts{0: {Processed: 1}}})
			return err
		}},
		{"rejoin", func(ctx context.Context) error { return e.c.Rejoin(ctx, held["f"]) }},
		{"result", func(ctx context.Context) error {
			return e.c.SaveResult(ctx, &held["f"].Info, held["f"].Token, []byte("r"))
		}},
		{"lease with a carried ack", func(ctx context.Context) error {
			wait, ok := e.c.CarryAck(held["e"])
			require.True(t, ok)
			res, err := e.c.Lease(ctx, LeaseRequest{Worker: "w2"})
			if werr := wait(ctx); err == nil {
				err = werr
			}
			if err == nil {
				require.Equal(t, []string{"d"}, ids(res.Tasks))
			}
			return err
		}},
		{"requeue dead", func(ctx context.Context) error { return e.c.RequeueDead(ctx, "x", RequeueDeadOptions{}) }},
		{"delete dead", func(ctx context.Context) error { return e.c.DeleteDead(ctx, "y") }},
		{"pause", func(ctx context.Context) error { return e.c.Pause(ctx, 1, PauseWait) }},
		{"resume", func(ctx context.Context) error { return e.c.Resume(ctx, AllLevels) }},
		{"deregister", func(ctx context.Context) error { return e.c.Deregister(ctx, "w3") }},
		{"reserve", func(ctx context.Context) error {
			u, _, err := e.c.Reserve(ctx, ReserveRequest{Worker: "w1", VictimID: "f", MinLevel: 1,
				MaxPreemptions: -1, IgnoreFleet: true})
			if err == nil {
				require.Equal(t, "x", u.ID)
			}
			return err
		}},
		{"stats", func(ctx context.Context) error { _, err := e.c.Stats(ctx); return err }},
		{"workers", func(ctx context.Context) error { _, err := e.c.Workers(ctx); return err }},
	}

	m, err := cl.StartMigration(e.ctx, slot, testredis.MigrateOptions{})
	require.NoError(t, err)
	var records []string
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "h", "i", "s", "x", "y"} {
		records = append(records, e.c.keys.task(id))
	}
	require.NoError(t, m.Move(e.ctx, records...))

	var refused []int
	for i, op := range ops {
		before := slotDump(t, e.ctx, cl.Addrs(), slot)
		err := op.call(e.ctx)
		after := slotDump(t, e.ctx, cl.Addrs(), slot)
		if err != nil {
			require.Contains(t, err.Error(), "TRYAGAIN", "%s: refused, but not as a whole", op.name)
			require.Equal(t, before, after, "%s: refused, yet keys changed", op.name)
			refused = append(refused, i)
		}
	}
	for done := false; !done; {
		done, err = m.Step(e.ctx)
		require.NoError(t, err)
	}
	require.NoError(t, m.Finish(e.ctx))
	require.Empty(t, m.Busy, "no key written on both masters")
	for _, i := range refused {
		require.NoError(t, ops[i].call(e.ctx), "%s after the migration", ops[i].name)
	}
	t.Logf("refused while the slot moved: %d of %d calls", len(refused), len(ops))

	// a and e acked, b retrying, c dead, d leased by w2, f and x by w1, y
	// deleted, h and i pending, s scheduled.
	e.requireCounts(counts{Pending: 2, Active: 2, Scheduled: 2, Dead: 1}, counts{}, counts{Active: 1})
	e.gone("a")
	e.gone("e")
	e.gone("y")
	require.Equal(t, []string{"h", "i"}, e.pending(0))
	require.Equal(t, StateRetry, e.inspect("b").State)
	require.Equal(t, 1, e.inspect("d").Preemptions)
	require.Equal(t, []byte("r"), e.inspect("f").Result)
}

// slotDump returns every key of slot on every master, with its DUMP (type
// and value), read with ASKING so that the importing master answers too.
func slotDump(t *testing.T, ctx context.Context, addrs []string, slot int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range addrs {
		n := redis.NewClient(&redis.Options{Addr: a, PoolSize: 1})
		keys, err := n.Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 100000).StringSlice()
		require.NoError(t, err)
		for _, k := range keys {
			var dump *redis.StringCmd
			_, err := n.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "ASKING")
				dump = p.Dump(ctx, k)
				return nil
			})
			require.NoError(t, err, "DUMP %s on %s", k, a)
			if _, dup := out[k]; dup {
				t.Fatalf("key %s on two masters", k)
			}
			out[k] = a + " " + strings.ToValidUTF8(dump.Val(), "?")
		}
		require.NoError(t, n.Close())
	}
	return out
}
