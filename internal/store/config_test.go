package store

import (
	"strconv"
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
		"result retention":      {Config{ResultRetention: -time.Second}, "negative ResultRetention -1s"},
		"result retention <1ms": {Config{ResultRetention: time.Microsecond}, "ResultRetention 1µs is under 1ms"},
		"numbers reversed":      {Config{LevelNames: []string{"2", "1", "0"}}, `level name "2" of level 0 reads as level 2`},
		"number of no level":    {Config{LevelNames: []string{"a", "b", "7"}}, `level name "7" of level 2 reads as level 7`},
		"signed number":         {Config{LevelNames: []string{"a", "+0", "c"}}, `level name "+0" of level 1 reads as level 0`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(rdb, tc.cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := New(rdb, Config{LevelNames: []string{"bulk", "std", "page"}, Levels: 3, Classes: map[string]int{"free": 0}})
	require.NoError(t, err)
	// A number may name its own level (the default names of 5 levels are
	// their numbers); a name, number or not, then means one level.
	for _, names := range [][]string{{"0", "1", "2"}, {"bulk", "1", "page"}, {"00", "+1", "2"}} {
		c, err := New(rdb, Config{LevelNames: names})
		require.NoError(t, err, names)
		for i, n := range names {
			l, err := c.LevelByName(n)
			require.NoError(t, err)
			require.Equal(t, i, l, "%v: %q", names, n)
			l, err = c.LevelByName(strconv.Itoa(i))
			require.NoError(t, err)
			require.Equal(t, i, l, "%v: %d", names, i)
		}
	}
	c, err := New(rdb, Config{Levels: 5})
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1", "2", "3", "4"}, c.Config().LevelNames)
}

// Bad arguments get a clear error and store nothing.
func TestBadArgumentsRejected(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		_, err := e.c.Enqueue(e.ctx, &Task{Info: Info{Type: "x", MaxRetries: -3}})
		require.ErrorIs(t, err, ErrInvalidTask)
		_, err = e.c.Enqueue(e.ctx, &Task{Info: Info{Type: "x", Timeout: -time.Second}})
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

// A config read back with Config, or filled by WithDefaults, and passed to
// New keeps Redis's clock: a lease's deadline follows Redis's TIME (set a
// year back on miniredis), not the host's. An injected clock read back
// stays injected.
func TestConfigReadBackKeepsItsClock(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		ctx := t.Context()
		if b.IsMini() {
			b.Miniredis.SetTime(time.Now().AddDate(-1, 0, 0))
		}
		ns := b.Prefix + ".readback"
		orig, err := New(b.Client, Config{Namespace: ns})
		require.NoError(t, err)
		leaseDeadline := func(c *Store, id string) time.Time {
			t.Helper()
			_, err := c.Enqueue(ctx, NewTask("t", nil), ID(id))
			require.NoError(t, err)
			res, err := c.Lease(ctx, LeaseRequest{Worker: "w-" + id})
			require.NoError(t, err)
			require.Len(t, res.Tasks, 1)
			require.NoError(t, c.Ack(ctx, res.Tasks[0]))
			return res.Tasks[0].LeaseDeadline
		}
		for name, cfg := range map[string]Config{"Config": orig.Config(), "WithDefaults": Config{Namespace: ns}.WithDefaults()} {
			c, err := New(b.Client, cfg)
			require.NoError(t, err)
			require.True(t, c.serverTime, name)
			redisNow, err := b.Client.Time(ctx).Result()
			require.NoError(t, err)
			require.WithinDuration(t, redisNow.Add(defaultLeaseDuration), leaseDeadline(c, name), 5*time.Second,
				"%s: the lease follows Redis's clock", name)
		}

		clk := newFakeClock()
		injected, err := New(b.Client, Config{Namespace: ns, Clock: clk.Now})
		require.NoError(t, err)
		again, err := New(b.Client, injected.Config())
		require.NoError(t, err)
		require.False(t, again.serverTime)
		require.Equal(t, clk.Now().Add(defaultLeaseDuration), leaseDeadline(again, "injected"), "the injected clock drives the scripts")
		hostNow, err := New(b.Client, Config{Namespace: ns, Clock: time.Now})
		require.NoError(t, err)
		require.False(t, hostNow.serverTime, "an injected time.Now is an injected clock")
	})
}
