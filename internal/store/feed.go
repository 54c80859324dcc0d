package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The preemption feed: a Redis stream, capped at about 1000 entries, that
// the scripts append to when a reservation takes an urgent task for a
// victim, when the victim gives way (its requeue) and when a preempted task
// is leased again, and when a task ends canceled. Ordinary tasks never write to it, so it costs nothing
// until something is preempted. Any client reads it (Preemptions), for a
// console or an audit, without an OpenTelemetry backend.

// FeedKind names a preemption feed event.
type FeedKind string

const (
	// FeedPreempt means a worker reserved urgent task ID for victim Victim.
	FeedPreempt FeedKind = "preempt"
	// FeedGaveWay means the preempted task ID was requeued after running Ran.
	FeedGaveWay FeedKind = "gave_way"
	// FeedResumed means the preempted task ID was leased again.
	FeedResumed FeedKind = "resumed"
	// FeedCanceled means task ID ended canceled (Cancel); Worker is the
	// worker that held it, if it ran.
	FeedCanceled FeedKind = "canceled"
)

// FeedEvent is one entry of the preemption feed.
type FeedEvent struct {
	// Seq is the entry's stream ID; pass it to Preemptions as after.
	Seq  string
	Kind FeedKind
	At   time.Time // by Redis's clock (or Config.Clock)
	// ID is the task: the urgent one (FeedPreempt) or the victim.
	ID     string
	Level  int
	Worker string
	// Victim and VictimLevel: the task the urgent one preempts (FeedPreempt).
	Victim      string
	VictimLevel int
	// Waited is how long the urgent task waited before it was reserved
	// (FeedPreempt).
	Waited time.Duration
	// Ran is how long the victim's run lasted until it gave way
	// (FeedGaveWay).
	Ran time.Duration
	// CheckpointSeq is the victim's checkpoint sequence (FeedGaveWay,
	// FeedResumed): 0 means it saved none.
	CheckpointSeq int64
	// Preemptions is how often the task was preempted so far (FeedResumed).
	Preemptions int
}

// preemptionsOne is Preemptions in c's shard: returns up to count feed events newer than after (a Seq; ""
// for the newest count), oldest first.
func (c *Store) preemptionsOne(ctx context.Context, after string, count int64) ([]FeedEvent, error) {
	if count < 1 {
		return nil, fmt.Errorf("%w: Preemptions count %d, want at least 1", ErrInvalidTask, count)
	}
	key := c.keys.feed()
	var msgs []redis.XMessage
	var err error
	if after == "" {
		msgs, err = c.rdb.XRevRangeN(ctx, key, "+", "-", count).Result()
		for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
			msgs[i], msgs[j] = msgs[j], msgs[i]
		}
	} else {
		msgs, err = c.rdb.XRangeN(ctx, key, "("+after, "+", count).Result()
	}
	if err != nil {
		return nil, wrapf(err, "preemptions")
	}
	out := make([]FeedEvent, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, parseFeed(m))
	}
	return out, nil
}

func parseFeed(m redis.XMessage) FeedEvent {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	num := func(k string) int64 { n, _ := strconv.ParseInt(str(k), 10, 64); return n }
	ev := FeedEvent{Seq: m.ID, Kind: FeedKind(str("k")), At: time.UnixMilli(num("t")), ID: str("id"),
		Level: int(num("l")), Worker: str("w"), Victim: str("victim"), VictimLevel: int(num("vl")),
		Waited: time.Duration(num("wait")) * time.Millisecond, Ran: time.Duration(num("ran")) * time.Millisecond,
		CheckpointSeq: num("cps"), Preemptions: int(num("pre"))}
	return ev
}
