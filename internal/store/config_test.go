package store

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// Bad configuration is refused at New with a message naming what is wrong.
func TestConfigRejectsBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = rdb.Close() })
	cases := map[string]struct {
		cfg  Config
		want string
	}{
		"duplicate level names": {Config{LevelNames: []string{"a", "a", "b"}, Levels: 3}, `level name "a" given twice`},
		"empty level name":      {Config{LevelNames: []string{"a", "", "b"}, Levels: 3}, "level 1 has an empty name"},
		"empty class name":      {Config{Classes: map[string]int{"": 1}}, "empty name"},
		"class out of range":    {Config{Classes: map[string]int{"gold": 3}}, `class "gold" maps to level 3`},
		"levels":                {Config{Levels: 65}, "Levels must be 1..64"},
		"lease":                 {Config{LeaseDuration: time.Millisecond}, "under 100ms"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(rdb, tc.cfg)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := New(rdb, Config{LevelNames: []string{"bulk", "std", "page"}, Levels: 3, Classes: map[string]int{"free": 0}})
	require.NoError(t, err)
}

// Bad arguments get a clear error and store nothing.
func TestBadArgumentsRejected(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		_, err := e.c.Enqueue(e.ctx, &Task{Type: "x", MaxRetries: -3})
		require.ErrorIs(t, err, ErrInvalidTask)
		_, err = e.c.Enqueue(e.ctx, &Task{Type: "x", Timeout: -time.Second})
		require.ErrorIs(t, err, ErrInvalidTask)
		_, err = e.c.DeadTasks(e.ctx, 0, 0)
		require.ErrorIs(t, err, ErrInvalidTask)
		_, err = e.c.DeadTasks(e.ctx, -1, 5)
		require.ErrorIs(t, err, ErrInvalidTask)
		_, err = e.c.Pending(e.ctx, 7)
		require.ErrorIs(t, err, ErrInvalidLevel)
		require.Equal(t, []counts{{}, {}, {}}, e.levelCounts(), "nothing stored")
	})
}
