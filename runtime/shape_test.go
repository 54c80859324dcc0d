package runtime_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// A worker whose levels disagree with the queue's stored shape would lease
// in the wrong order: runtime.New refuses it with ErrShapeMismatch, even
// for a queue client made while Redis was down (whose queue.New could not
// check), and accepts one whose shape matches.
func TestNewShapeMismatch(t *testing.T) {
	b := testredis.Mini(t)
	b.Miniredis.Close()
	rdb := redis.NewClient(&redis.Options{Addr: b.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := queue.New(rdb, queue.Config{Namespace: b.Prefix}) // 3 levels, unchecked
	require.NoError(t, err)

	require.NoError(t, b.Miniredis.Restart())
	producer, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Levels: 5})
	require.NoError(t, err)

	_, err = runtime.New(q, handlers.NewMux(), runtime.Config{})
	require.ErrorIs(t, err, queue.ErrShapeMismatch)
	require.Contains(t, err.Error(), `holds {"schema":2,"levels":["0","1","2","3","4"]}`)
	_, err = runtime.New(producer, handlers.NewMux(), runtime.Config{})
	require.NoError(t, err)
}
