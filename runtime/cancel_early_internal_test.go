package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/store"
)

// A cancel that comes while the lease call (or reservation) that took its
// task is in flight finds no run; it is kept, and the run is cancelled as
// it is registered, not at the next heartbeat. Only for a while, and
// only for that task.
func TestCancelBeforeRunRegistered(t *testing.T) {
	s := newSlots(Config{Concurrency: 4}, 3, zap.NewNop())
	noTimer := func(*run) *time.Timer { return nil }
	newRun := func(id string) *run {
		rn := &run{t: &store.Task{Info: store.Info{ID: id}}}
		rn.ctx, rn.cancel = context.WithCancelCause(context.Background())
		return rn
	}
	require.Nil(t, s.toCancel("a", noTimer), "no run yet")
	require.Nil(t, s.toCancel("u", noTimer))
	a, b := newRun("a"), newRun("b")
	s.claim([]int{2})
	canceled := s.addLeased([]*run{a, b}, []int{2})
	require.Equal(t, []*run{a}, canceled, "the lease's run of a is cancelled as it is registered")

	// The reservation's path (slots.add) too, once.
	u := newRun("u")
	require.True(t, s.add(u, true))
	u2 := newRun("u")
	require.False(t, s.add(u2, true), "a kept cancel is used once")

	// One kept too long is dropped.
	require.Nil(t, s.toCancel("c", noTimer))
	s.mu.Lock()
	s.early["c"] = time.Now().Add(-earlyCancelFor - time.Second)
	s.mu.Unlock()
	require.False(t, s.add(newRun("c"), false))

	// The dispatcher cancels what addLeased returns, with ErrCanceled.
	for _, rn := range canceled {
		rn.cancel(handlers.ErrCanceled)
	}
	require.True(t, errors.Is(context.Cause(a.ctx), handlers.ErrCanceled))
	require.NoError(t, context.Cause(b.ctx))
}

// The kept cancels are bounded: a flood of cancels for other workers'
// tasks (every worker hears every one) keeps at most maxEarlyCancels.
func TestEarlyCancelsBounded(t *testing.T) {
	s := newSlots(Config{Concurrency: 1}, 1, zap.NewNop())
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range maxEarlyCancels + 100 {
		s.keepEarly(string(rune('a'+i%26)) + time.Duration(i).String())
	}
	require.Len(t, s.early, maxEarlyCancels)
}
