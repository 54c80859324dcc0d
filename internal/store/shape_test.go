package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// openQueue records the shape of queue name of namespace ns.
func openQueue(t *testing.T, rdb redis.UniversalClient, ns, name string, levels int) *Store {
	t.Helper()
	s, err := New(rdb, Config{Namespace: ns, Name: name, Levels: levels})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.CheckShape(ctx))
	return s
}

// ReadShape returns what the first open recorded, ErrNoQueue for a queue
// never opened; Queues lists the queues of one namespace only, names with
// the characters keys escape included, and not a key that merely ends in
// ":shape".
func TestReadShapeAndQueues(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		ns := b.Prefix + ".q"
		s := openQueue(t, b.Client, ns, "five", 5)
		openQueue(t, b.Client, ns, "a:b{c}%", 3)
		openQueue(t, b.Client, ns+"x", "other", 3)
		openQueue(t, b.Client, ns+":sub", "nested", 3)
		require.NoError(t, b.Client.Set(ctx, s.keys.task("x}:shape"), "1", 0).Err())

		sh, err := ReadShape(ctx, b.Client, ns, "five")
		require.NoError(t, err)
		require.Equal(t, Shape{Schema: schemaVersion, LevelNames: []string{"0", "1", "2", "3", "4"}}, sh)
		require.Equal(t, 5, sh.Apply(Config{}).Levels)
		_, err = ReadShape(ctx, b.Client, ns, "missing")
		require.ErrorIs(t, err, ErrNoQueue)
		require.NoError(t, b.Client.Set(ctx, newKeys(ns, "bad").shape(), "[]", 0).Err())
		_, err = ReadShape(ctx, b.Client, ns, "bad")
		require.ErrorIs(t, err, ErrCorrupt)

		names, err := Queues(ctx, b.Client, ns)
		require.NoError(t, err)
		require.Equal(t, []string{"a:b{c}%", "bad", "five"}, names)
		names, err = Queues(ctx, b.Client, ns+"-none")
		require.NoError(t, err)
		require.Empty(t, names)
	})
}

// On a Cluster the shape keys of a namespace's queues live on different
// masters; Queues scans every one of them.
func TestQueuesCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Redis Cluster")
	}
	t.Parallel()
	cl := testredis.StartCluster(t)
	cc, ok := cl.Client().(*redis.ClusterClient)
	require.True(t, ok, "cluster client is %T", cl.Client())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	ns := "cl" + hex.EncodeToString(rb[:])

	nodes := map[string]bool{}
	var want []string
	for i := 0; len(nodes) < 3 && i < 200; i++ {
		name := fmt.Sprint("q", i)
		master, err := cc.MasterForKey(ctx, newKeys(ns, name).shape())
		require.NoError(t, err)
		if !nodes[master.Options().Addr] {
			nodes[master.Options().Addr] = true
			openQueue(t, cc, ns, name, 2+len(want))
			want = append(want, name)
		}
	}
	require.Len(t, nodes, 3, "one queue per master")
	names, err := Queues(ctx, cc, ns)
	require.NoError(t, err)
	require.ElementsMatch(t, want, names)
	for i, name := range want {
		sh, err := ReadShape(ctx, cc, ns, name)
		require.NoError(t, err)
		require.Len(t, sh.LevelNames, 2+i)
	}
}

// Classes are checked for conflicts, not equality: a process with fewer
// classes, or none, uses a queue whose producers set them; a class the
// stored shape lacks is added to it, so a later process that maps it
// elsewhere is refused; levels must still be equal.
func TestShapeClassesMerge(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		ns := b.Prefix + ".classes"
		check := func(cfg Config) error {
			cfg.Namespace, cfg.Name = ns, "q"
			s, err := New(b.Client, cfg)
			require.NoError(t, err)
			return s.CheckShape(ctx)
		}
		stored := func() Shape {
			sh, err := ReadShape(ctx, b.Client, ns, "q")
			require.NoError(t, err)
			return sh
		}
		require.NoError(t, check(Config{Classes: map[string]int{"paying": 2}}))
		require.NoError(t, check(Config{}), "a worker that never set Classes")
		require.NoError(t, check(Config{Classes: map[string]int{"paying": 2}}))
		require.NoError(t, check(Config{Classes: map[string]int{"free": 0, "paying": 2}}))
		require.Equal(t, map[string]int{"free": 0, "paying": 2}, stored().Classes, "the class added")
		require.NoError(t, check(Config{Classes: map[string]int{"free": 0}}))

		err := check(Config{Classes: map[string]int{"paying": 1}})
		require.ErrorIs(t, err, ErrShapeMismatch)
		err = check(Config{Classes: map[string]int{"new": 1, "free": 2}})
		require.ErrorIs(t, err, ErrShapeMismatch)
		require.Equal(t, map[string]int{"free": 0, "paying": 2}, stored().Classes, "a refused process adds nothing")
		require.ErrorIs(t, check(Config{Levels: 4}), ErrShapeMismatch)
		require.ErrorIs(t, check(Config{LevelNames: []string{"a", "b", "c"}}), ErrShapeMismatch)

		// A merged shape is written as json.Marshal writes it, so the next
		// process with the same classes matches it as a string.
		raw, err := b.Client.Get(ctx, newKeys(ns, "q").shape()).Result()
		require.NoError(t, err)
		want, err := json.Marshal(ShapeOf(Config{Classes: map[string]int{"free": 0, "paying": 2}}))
		require.NoError(t, err)
		require.Equal(t, string(want), raw)
	})
}
