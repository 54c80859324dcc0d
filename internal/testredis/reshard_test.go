package testredis_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/testredis"
)

// TestMigrateSlot moves hash slots between the masters of a real cluster
// the way `redis-cli --cluster reshard` does, and checks that a cluster
// client reads every key while the slot is half-moved (following ASK) and
// afterwards (following MOVED), that every key ends on the target, and how
// BUSYKEY is handled.
func TestMigrateSlot(t *testing.T) {
	cl := testredis.StartCluster(t)
	rc := cl.Client()
	cc := rc.(*redis.ClusterClient)

	// fill writes n keys of tag's slot through the cluster client.
	fill := func(t *testing.T, tag string, n int) (slot int, keys []string) {
		c := ctx(t)
		for i := range n {
			k := fmt.Sprintf("{%s}:k%d", tag, i)
			if err := rc.Set(c, k, k, 0).Err(); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		return int(cc.ClusterKeySlot(c, keys[0]).Val()), keys
	}
	// readAll reads every key through client r; each holds its own name.
	readAll := func(t *testing.T, r redis.UniversalClient, keys []string) {
		t.Helper()
		for _, k := range keys {
			if v, err := r.Get(ctx(t), k).Result(); err != nil || v != k {
				t.Fatalf("read %s = %q, %v", k, v, err)
			}
		}
	}
	// count returns how many keys of slot the master at addr holds.
	count := func(t *testing.T, addr string, slot int) int64 {
		n := redis.NewClient(&redis.Options{Addr: addr})
		defer n.Close()
		v, err := n.ClusterCountKeysInSlot(ctx(t), slot).Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	t.Run("steps", func(t *testing.T) {
		c := ctx(t)
		slot, keys := fill(t, "steps", 95)
		reader := cl.NewClient(t)
		readAll(t, reader, keys) // the reader learns the slot's owner
		m, err := cl.StartMigration(c, slot, testredis.MigrateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owner, _ := cl.SlotOwner(c, slot)
		if m.From != owner || m.To == m.From {
			t.Fatalf("migration %s -> %s, owner %s", m.From, m.To, owner)
		}
		for steps := 0; ; steps++ {
			if steps > 20 {
				t.Fatalf("not done after %d steps, %d moved", steps, m.Moved)
			}
			done, err := m.Step(c)
			if err != nil {
				t.Fatal(err)
			}
			if done {
				break
			}
			// Half-moved: some keys on each master; reads follow ASK.
			if got := count(t, m.To, slot); got != int64(m.Moved) {
				t.Fatalf("target holds %d keys after moving %d", got, m.Moved)
			}
			readAll(t, reader, keys)
		}
		if m.Moved != len(keys) || m.Batches != 10 || len(m.Busy) != 0 {
			t.Fatalf("moved %d keys in %d batches, busy %v; want %d in 10, none", m.Moved, m.Batches, m.Busy, len(keys))
		}
		if err := m.Finish(c); err != nil {
			t.Fatal(err)
		}
		if owner, err := cl.SlotOwner(c, slot); err != nil || owner != m.To {
			t.Fatalf("owner %s (%v), want %s", owner, err, m.To)
		}
		if src, dst := count(t, m.From, slot), count(t, m.To, slot); src != 0 || dst != int64(len(keys)) {
			t.Fatalf("source holds %d keys, target %d; want 0, %d", src, dst, len(keys))
		}
		readAll(t, reader, keys) // MOVED: the reader learns the new owner
	})

	t.Run("concurrent", func(t *testing.T) {
		c := ctx(t)
		slot, keys := fill(t, "conc", 300)
		reader, writer := cl.NewClient(t), cl.NewClient(t)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var reads, writes int
		var during atomic.Int64 // reads done before the migration returned
		var rerr, werr error
		first := make(chan struct{})
		wg.Add(2)
		go func() { // reads every key over and over, each at least once
			defer wg.Done()
			for {
				k := keys[reads%len(keys)]
				if v, err := reader.Get(c, k).Result(); err != nil || v != k {
					rerr = fmt.Errorf("read %s = %q, %w", k, v, err)
					if reads == 0 {
						close(first)
					}
					return
				}
				if reads++; reads == 1 {
					close(first)
				}
				during.Add(1)
				if reads < len(keys) {
					continue
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		<-first     // the reads overlap the migration
		go func() { // writes new keys of the slot: no BUSYKEY may follow
			defer wg.Done()
			for {
				if werr = writer.Set(c, fmt.Sprintf("{conc}:new%d", writes), 1, 0).Err(); werr != nil {
					return
				}
				writes++
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		m, err := cl.MigrateSlot(c, slot, testredis.MigrateOptions{Pause: 2 * time.Millisecond})
		overlapped := during.Load()
		close(stop)
		wg.Wait()
		if err != nil || rerr != nil || werr != nil {
			t.Fatalf("migrate: %v; reader: %v; writer: %v", err, rerr, werr)
		}
		// Every key read (the reader goes on after the migration until it
		// has read each once), some of them while the slot moved; not a
		// count during the migration, which depends on the machine's load.
		if len(m.Busy) != 0 || m.Moved < len(keys) || reads < len(keys) || overlapped == 0 {
			t.Fatalf("busy %v, moved %d of %d+, %d reads (%d before the migration returned)", m.Busy, m.Moved,
				len(keys), reads, overlapped)
		}
		if src, dst := count(t, m.From, slot), count(t, m.To, slot); src != 0 || dst != int64(len(keys)+writes) {
			t.Fatalf("source holds %d keys, target %d; want 0, %d", src, dst, len(keys)+writes)
		}
		readAll(t, cl.NewClient(t), keys)
		t.Logf("%d keys in %d batches while %d reads and %d writes ran", m.Moved, m.Batches, overlapped, writes)
	})

	// A key written on the target (ASKING) while the source still holds it
	// makes MIGRATE answer BUSYKEY.
	busy := func(t *testing.T, tag string, replace bool) (m *testredis.Migration, key string, err error) {
		c := ctx(t)
		slot, keys := fill(t, tag, 5)
		m, err = cl.StartMigration(c, slot, testredis.MigrateOptions{Replace: replace})
		if err != nil {
			t.Fatal(err)
		}
		onTarget(t, m.To, func(p redis.Pipeliner) { p.Set(c, keys[2], "target's", 0) })
		_, err = m.Step(c)
		return m, keys[2], err
	}
	t.Run("busykey", func(t *testing.T) {
		m, k, err := busy(t, "busy", false)
		if !errors.Is(err, testredis.ErrBusyKey) || len(m.Busy) != 1 || m.Busy[0] != k {
			t.Fatalf("step: %v, busy %v; want ErrBusyKey for %s", err, m.Busy, k)
		}
		if src := count(t, m.From, m.Slot); src != 1 {
			t.Fatalf("source holds %d keys, want the busy one", src)
		}
		// Once the target's copy is gone, the migration goes on.
		onTarget(t, m.To, func(p redis.Pipeliner) { p.Del(ctx(t), k) })
		if _, err := m.Step(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if done, err := m.Step(ctx(t)); !done || err != nil {
			t.Fatalf("last step: done %v, %v", done, err)
		}
		if err := m.Finish(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if v := cl.NewClient(t).Get(ctx(t), k).Val(); v != k {
			t.Fatalf("%s = %q, want the source's value", k, v)
		}
	})
	t.Run("replace", func(t *testing.T) {
		m, k, err := busy(t, "repl", true)
		if err != nil || len(m.Busy) != 1 || m.Busy[0] != k {
			t.Fatalf("step: %v, busy %v; want %s replaced", err, m.Busy, k)
		}
		if done, err := m.Step(ctx(t)); !done || err != nil {
			t.Fatalf("second step: done %v, %v", done, err)
		}
		if err := m.Finish(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if v := cl.NewClient(t).Get(ctx(t), k).Val(); v != k {
			t.Fatalf("%s = %q after REPLACE, want the source's value", k, v)
		}
	})
}

// onTarget runs cmd on the master at addr after ASKING, as a client
// redirected there by ASK does, for a slot that master is importing.
func onTarget(t *testing.T, addr string, cmd func(p redis.Pipeliner)) {
	t.Helper()
	n := redis.NewClient(&redis.Options{Addr: addr})
	defer n.Close()
	if _, err := n.Pipelined(ctx(t), func(p redis.Pipeliner) error {
		p.Do(ctx(t), "ASKING")
		cmd(p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
