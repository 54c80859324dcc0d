package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/ckpt"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/internal/tasklog"
)

type ctxKey struct{}

// A run's context answers the Handle and logger lookups from the run,
// every other key, the deadline and the cancel cause from its parent;
// its detached view keeps the values without the cancel, and neither
// allocates.
func TestRunContext(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
	parent, cancelTimeout := context.WithTimeout(parent, time.Hour)
	defer cancelTimeout()
	rn := &run{t: &store.Task{}}
	rn.log.l, rn.log.t = zap.NewNop(), rn.t
	rn.rctx = runContext{Context: parent, rn: rn}
	rn.ctx = &rn.rctx

	h, ok := ckpt.FromContext(rn.ctx)
	require.True(t, ok)
	assert.Same(t, &rn.cp, h)
	l, ok := tasklog.FromContext(rn.ctx)
	require.True(t, ok)
	assert.Same(t, rn.log.Logger(), l)
	assert.Equal(t, "v", rn.ctx.Value(ctxKey{}))
	_, hasDeadline := rn.ctx.Deadline()
	assert.True(t, hasDeadline)

	d := rn.detached()
	assert.Equal(t, "v", d.Value(ctxKey{}))
	_, ok = ckpt.FromContext(d)
	assert.True(t, ok, "the detached view keeps the run's values")
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() {
		_ = rn.detached().Value(ctxKey{})
		_, _ = ckpt.FromContext(rn.ctx)
		_, _ = tasklog.FromContext(rn.ctx)
	}))

	cancel(handlers.ErrPreempted)
	<-rn.ctx.Done()
	assert.ErrorIs(t, context.Cause(rn.ctx), handlers.ErrPreempted)
	// A context derived from it (the handler's timeout) is canceled with it.
	child, stop := context.WithTimeout(rn.ctx, time.Hour)
	defer stop()
	<-child.Done()
	assert.ErrorIs(t, context.Cause(child), handlers.ErrPreempted)
	assert.NoError(t, d.Err())
	assert.Nil(t, d.Done())
	_, hasDeadline = d.Deadline()
	assert.False(t, hasDeadline)
}
