package queue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// The first New records the queue's shape; a New whose Levels or
// LevelNames differ, or that maps a class to another level, fails with
// ErrShapeMismatch naming both, so a producer and a worker cannot silently
// disagree on the priority order. Configs that spell the same shape
// differently, a Config read back, and one without the classes match.
func TestShapeMismatch(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		five := queue.Config{Namespace: b.Prefix, Name: "five", Levels: 5, Classes: map[string]int{"paying": 4}}
		q, err := queue.New(b.Client, five)
		require.NoError(t, err)

		_, err = queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "five"})
		require.ErrorIs(t, err, queue.ErrShapeMismatch)
		require.Contains(t, err.Error(), `queue "five"`)
		require.Contains(t, err.Error(), `holds {"schema":2,"levels":["0","1","2","3","4"],"classes":{"paying":4}}`)
		require.Contains(t, err.Error(), `this config has {"schema":2,"levels":["low","normal","high"]}`)

		names := five
		names.LevelNames = []string{"a", "b", "c", "d", "e"}
		_, err = queue.New(b.Client, names)
		require.ErrorIs(t, err, queue.ErrShapeMismatch, "same count, other names")
		classes := five
		classes.Classes = map[string]int{"paying": 3}
		_, err = queue.New(b.Client, classes)
		require.ErrorIs(t, err, queue.ErrShapeMismatch, "another class map")

		_, err = queue.New(b.Client, q.Config())
		require.NoError(t, err, "a Config read back matches")
		_, err = queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "five", Levels: 5})
		require.NoError(t, err, "a worker that never set Classes")
		same := five
		same.LevelNames = []string{"0", "1", "2", "3", "4"}
		_, err = queue.New(b.Client, same)
		require.NoError(t, err, "the default names spelled out")

		// Another queue of the namespace has a shape of its own.
		_, err = queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "three"})
		require.NoError(t, err)
	})
}

// New cannot check the shape while Redis is down, so it returns a client
// that checks before its first call: the first Enqueue after Redis is back
// fails with ErrShapeMismatch, and enqueues nothing; so do the other calls
// that use the levels (Depths included).
func TestShapeCheckedOnFirstCall(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		rdb, up := b.DownClient(t)
		q, err := queue.New(rdb, queue.Config{Namespace: b.Prefix})
		require.NoError(t, err, "New does not fail because Redis is down")
		require.False(t, q.ShapeChecked())

		up()
		other, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix, Levels: 2})
		require.NoError(t, err)
		require.True(t, other.ShapeChecked())

		_, err = q.Enqueue(ctx, queue.NewTask("mail", nil))
		require.ErrorIs(t, err, queue.ErrShapeMismatch)
		_, err = q.EnqueueBatch(ctx, []*queue.Task{queue.NewTask("mail", nil)})
		require.ErrorIs(t, err, queue.ErrShapeMismatch)
		_, err = q.Stats(ctx)
		require.ErrorIs(t, err, queue.ErrShapeMismatch)
		_, err = q.Depths(ctx)
		require.ErrorIs(t, err, queue.ErrShapeMismatch)
		require.ErrorIs(t, q.Pause(ctx, 0, queue.PauseWait), queue.ErrShapeMismatch)
		keys, err := b.Client.Keys(ctx, "*"+b.Prefix+"*").Result()
		require.NoError(t, err)
		require.Len(t, keys, 1, "only the shape key: %v", keys)
		require.False(t, q.ShapeChecked())
	})
}

// A shape key that holds something else is reported as ErrCorrupt, a
// shape of another schema version as ErrSchema.
func TestShapeCorrupt(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		ctx := context.Background()
		require.NoError(t, b.Client.LPush(ctx, "{"+b.Prefix+":default}:shape", "x").Err())
		_, err := queue.New(b.Client, queue.Config{Namespace: b.Prefix})
		require.ErrorIs(t, err, queue.ErrCorrupt)
		require.NoError(t, b.Client.Set(ctx, "{"+b.Prefix+":q}:shape", "{", 0).Err())
		_, err = queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "q"})
		require.ErrorIs(t, err, queue.ErrCorrupt)
		require.NoError(t, b.Client.Set(ctx, "{"+b.Prefix+":old}:shape", `{"schema":1,"levels":["a"]}`, 0).Err())
		_, err = queue.New(b.Client, queue.Config{Namespace: b.Prefix, Name: "old"})
		require.ErrorIs(t, err, queue.ErrSchema)
		require.Contains(t, err.Error(), "schema version 1; this client reads version 2")
	})
}
