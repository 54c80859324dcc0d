package main

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/store"
)

// TestCounterKinds names the store's calls as they go: an Enqueue, a
// lease, and an ack alone (finish.lua, whose first key is leases too).
func TestCounterKinds(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), Protocol: 2})
	defer rdb.Close()
	hook := newCounter()
	rdb.AddHook(hook)
	ctx := context.Background()
	s, err := store.New(rdb, store.Config{Namespace: "kinds"})
	require.NoError(t, err)
	_, err = s.Enqueue(ctx, store.NewTask("noop", nil))
	require.NoError(t, err)
	before := hook.snapshot()
	res, err := s.Lease(ctx, store.LeaseRequest{Worker: "w", Count: 1})
	require.NoError(t, err)
	require.Len(t, res.Tasks, 1)
	require.NoError(t, s.Ack(ctx, res.Tasks[0]))
	d := hook.snapshot().sub(before)
	// Each script's first call is an EVALSHA refused (NOSCRIPT), then EVAL.
	assert.Equal(t, map[string]int64{"lease": 1, "lease(eval)": 1, "finish": 1, "finish(eval)": 1}, d.kinds)
}
