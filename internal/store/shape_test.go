package store

import (
	"context"
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
// never opened.
func TestReadShape(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		ns := b.Prefix + ".q"
		openQueue(t, b.Client, ns, "five", 5)

		sh, err := ReadShape(ctx, b.Client, ns, "five")
		require.NoError(t, err)
		require.Equal(t, Shape{Schema: schemaVersion, LevelNames: []string{"0", "1", "2", "3", "4"}}, sh)
		require.Equal(t, 5, sh.Apply(Config{}).Levels)
		_, err = ReadShape(ctx, b.Client, ns, "missing")
		require.ErrorIs(t, err, ErrNoQueue)
		require.NoError(t, b.Client.Set(ctx, newKeys(ns, "bad").shape(), "[]", 0).Err())
		_, err = ReadShape(ctx, b.Client, ns, "bad")
		require.ErrorIs(t, err, ErrCorrupt)
	})
}
