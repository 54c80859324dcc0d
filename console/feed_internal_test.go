package console

import (
	"testing"
	"time"

	"github.com/overtake/overtake/internal/testredis"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/queue"
)

// joinFeed makes one row per preemption from the three events, and leaves
// a row open while its victim has not given way or resumed.
func TestJoinFeed(t *testing.T) {
	q, err := queue.New(testredis.Mini(t).Client, queue.Config{Name: "q"})
	require.NoError(t, err)
	c, err := New(q, Options{})
	require.NoError(t, err)
	t0 := time.UnixMilli(1_750_000_000_000)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	evs := []queue.FeedEvent{
		{Kind: queue.FeedResumed, ID: "old", At: at(0)}, // its preemption fell off the stream
		{Kind: queue.FeedPreempt, ID: "u1", Level: 2, Victim: "v", VictimLevel: 0, Worker: "w", Waited: 30 * time.Millisecond, At: at(10)},
		{Kind: queue.FeedGaveWay, ID: "v", Worker: "w", Ran: time.Second, CheckpointSeq: 4, At: at(25)},
		{Kind: queue.FeedPreempt, ID: "u2", Level: 1, Victim: "x", VictimLevel: 0, Worker: "w2", At: at(30)},
		{Kind: queue.FeedResumed, ID: "v", Worker: "w3", Preemptions: 1, CheckpointSeq: 4, At: at(525)},
	}
	rows := c.joinFeed(evs)
	require.Len(t, rows, 2)
	r := rows[0]
	require.Equal(t, []any{"u1", "v", "high", "low", "w", 30 * time.Millisecond}, []any{r.Urgent.ID, r.Victim.ID, r.UrgentLevel, r.VictimLevel, r.Worker, r.Waited})
	require.True(t, r.GaveWay)
	require.Equal(t, 15*time.Millisecond, r.GaveWayIn)
	require.Equal(t, time.Second, r.Ran)
	require.EqualValues(t, 4, r.Checkpoint)
	require.True(t, r.Resumed)
	require.Equal(t, 500*time.Millisecond, r.ResumedAfter)
	require.Equal(t, "w3", r.ResumedOn)
	require.False(t, rows[1].GaveWay)
	require.False(t, rows[1].Resumed)
}

// A victim canceled before it resumed (or before it gave way) closes its
// row as canceled; a cancel of any other task leaves the rows alone.
func TestJoinFeedCanceled(t *testing.T) {
	q, err := queue.New(testredis.Mini(t).Client, queue.Config{Name: "q"})
	require.NoError(t, err)
	c, err := New(q, Options{})
	require.NoError(t, err)
	at := time.UnixMilli(1_750_000_000_000)
	rows := c.joinFeed([]queue.FeedEvent{
		{Kind: queue.FeedPreempt, ID: "u1", Level: 2, Victim: "v", At: at},
		{Kind: queue.FeedGaveWay, ID: "v", CheckpointSeq: 2, At: at},
		{Kind: queue.FeedPreempt, ID: "u2", Level: 2, Victim: "x", At: at},
		{Kind: queue.FeedCanceled, ID: "other", At: at},
		{Kind: queue.FeedCanceled, ID: "v", At: at},
		{Kind: queue.FeedCanceled, ID: "x", Worker: "w", At: at},
		{Kind: queue.FeedResumed, ID: "v", At: at}, // never: a canceled task does not run again
	})
	require.Len(t, rows, 2)
	require.True(t, rows[0].GaveWay)
	require.True(t, rows[0].Canceled)
	require.False(t, rows[0].Resumed, "a canceled victim's row is closed")
	require.False(t, rows[1].GaveWay)
	require.True(t, rows[1].Canceled)
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{-1: "0s", 850 * time.Millisecond: "850ms", 4200 * time.Millisecond: "4.2s",
		42 * time.Second: "42s", 185 * time.Second: "3m05s", 130 * time.Minute: "2h10m", 50 * time.Hour: "2d02h"} {
		require.Equal(t, want, fmtDur(d))
	}
	require.Equal(t, "0", fmtRate(0))
	require.Equal(t, "0.05/s", fmtRate(0.05))
	require.Equal(t, "12/s", fmtRate(12.2))
	require.Equal(t, "1.2M", fmtCount(1_200_000))
	require.Equal(t, "hi", show([]byte("hi")).Text)
	require.True(t, show([]byte{0xff, 0, 1}).Binary)
	require.True(t, show(make([]byte, maxShown+1)).Cut)
	for in, want := range map[string]string{"": "./", "./": "./", "dead?offset=50": "dead?offset=50",
		"//evil": "./", "https://evil": "./", "/abs": "./", "dead?x=<": "./", "dead?": "dead"} {
		require.Equal(t, want, backTo(in), in)
	}
	for id, want := range map[string]string{"a1": "task?id=a1", "x y&z=1/2": "task?id=x%20y%26z%3D1%2F2"} {
		require.Equal(t, want, backToTask(id))
		require.Equal(t, want, backTo(backToTask(id)), "backTo keeps it")
	}
}

func TestJaegerSearch(t *testing.T) {
	require.Equal(t, `http://j:16686/search?lookback=2d&tags=%7B%22messaging.message.id%22%3A%22a%5C%22b%22%7D`,
		jaegerSearch("http://j:16686/", "", `a"b`))
}
