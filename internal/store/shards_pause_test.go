package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// TestShardLeasePausedUnknown: a level paused while this worker does not
// know it yet (not in Skip) reads as empty to a sharded lease's views, so
// the lease takes the next level's tasks at once. Before, the allocation
// gave the paused level's task a slot, the shard's lease call put it back
// (paused) and the view after the call still held it: the round stopped
// before the lower level (passedOver), and every round did, so the lease
// took nothing until the worker learned of the pause.
func TestShardLeasePausedUnknown(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Shards = 3 })
		paused := e.enqueueIn(1, 3, 1, "paused")
		low := e.enqueueIn(2, 3, 0, "low")
		require.NoError(t, e.c.Pause(e.ctx, 1, PauseWait))
		got := e.lease("w", 2)
		require.Len(t, got, 1, "the level below the paused one is leased")
		require.Equal(t, low.ID, got[0].ID)
		ids, err := e.c.Pending(e.ctx, 1)
		require.NoError(t, err)
		require.Equal(t, []string{paused.ID}, ids, "the paused task waits")
	})
}
