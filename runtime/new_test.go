package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A runtime that is made but never started holds no goroutine (the pool
// is made by Start and released by Shutdown): nothing to leak, nothing to
// close.
func TestNewAcquiresNothing(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		q := setup(t, b, queue.Config{})
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		for range 3 {
			rt, err := runtime.New(q, handlers.NewMux(), runtime.Config{Concurrency: 4})
			require.NoError(t, err)
			require.NotEmpty(t, rt.WorkerID())
		}
	})
}
