package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/stretchr/testify/require"
)

// Concurrent single Enqueues share script calls (group commit): every task
// is stored once, in its level, each caller gets its own answer (a
// duplicate ID is refused for that caller only), and far fewer script calls
// than tasks reach Redis.
func TestEnqueueGroupsConcurrentCalls(t *testing.T) {
	srv := testredis.StartServer(t, testredis.ServerOptions{})
	rdb := srv.NewClient(t)
	e := newEnvOn(t, rdb, "group", nil)
	require.NoError(t, rdb.ConfigResetStat(e.ctx).Err())
	const goroutines, each = 64, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var dups, stored int
	var other []error
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("t-%d-%d", g, i)
				if g%2 == 1 && i == 0 {
					id = fmt.Sprintf("t-%d-%d", g-1, 0) // the same ID as the even goroutine's first
				}
				_, err := e.c.Enqueue(e.ctx, NewTask("x", []byte(id)), ID(id), Level(i%3))
				mu.Lock()
				switch {
				case err == nil:
					stored++
				case errors.Is(err, ErrDuplicateTask):
					dups++
				default:
					other = append(other, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Empty(t, other)
	require.Equal(t, goroutines/2, dups, "each repeated ID is refused once")
	require.Equal(t, goroutines*each-goroutines/2, stored)
	st := e.stats()
	require.EqualValues(t, stored, st.Levels[0].Pending+st.Levels[1].Pending+st.Levels[2].Pending)
	calls, err := testredis.ScriptCalls(e.ctx, rdb)
	require.NoError(t, err)
	t.Logf("%d enqueues in %d script calls", goroutines*each, calls)
	require.Less(t, calls, int64(goroutines*each/2), "concurrent enqueues share script calls")
}
