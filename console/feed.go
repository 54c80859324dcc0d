package console

import (
	"context"
	"net/url"
	"time"

	"github.com/overtake/overtake/queue"
)

// feedRead is how many feed events a page reads: the whole capped stream.
const feedRead = 1200

// preemption is one row of the feed: the three events of one preemption
// joined by the victim's ID.
type preemption struct {
	At                 time.Time
	Urgent, Victim     taskRef
	UrgentLevel        string
	VictimLevel        string
	Worker             string
	Waited             time.Duration // the urgent task's wait
	GaveWay            bool          // the victim was requeued
	GaveWayIn          time.Duration // from the reservation to the requeue
	Ran                time.Duration // the victim's run until it gave way
	Checkpoint         int64         // the victim's checkpoint sequence; 0: none saved
	Resumed            bool
	ResumedAt          time.Time
	ResumedAfter       time.Duration // from the requeue to the resume
	ResumedOn          string        // the worker that resumed it
	VictimPreemptions  int
	ResumedCheckpoint  int64
	CheckpointReported bool // GaveWay or Resumed told the sequence
	Canceled           bool // the victim was canceled before it resumed
}

// cancellation is a task that ended canceled (Client.Cancel).
type cancellation struct {
	At     time.Time
	Task   taskRef
	Level  string
	Worker string // the worker that ran it; "" when it was waiting
}

type feedData struct {
	Rows     []preemption // newest first
	Pager    pager
	Canceled []cancellation // the latest, newest first
}

func (c *Console) feedView(ctx context.Context, q url.Values) (any, error) {
	off, err := intParam(q, "offset", 0, 0, maxOffset)
	if err != nil {
		return nil, err
	}
	evs, err := c.q.Preemptions(ctx, "", feedRead)
	if err != nil {
		return nil, err
	}
	rows := c.joinFeed(evs)
	d := &feedData{}
	for i := len(evs) - 1; i >= 0 && len(d.Canceled) < pageSize; i-- {
		if e := evs[i]; e.Kind == queue.FeedCanceled {
			d.Canceled = append(d.Canceled, cancellation{At: e.At, Task: c.ref(e.ID), Level: c.q.LevelName(e.Level), Worker: e.Worker})
		}
	}
	total := int64(len(rows))
	for i := total - 1 - off; i >= 0 && i > total-1-off-pageSize; i-- {
		d.Rows = append(d.Rows, rows[i])
	}
	d.Pager = newPager("feed", q, off, int64(len(d.Rows)), total)
	return d, nil
}

// joinFeed turns feed events, oldest first, into preemptions, oldest
// first: each reservation is joined with its victim's next requeue, and
// that with the victim's next resume, or its cancel.
func (c *Console) joinFeed(evs []queue.FeedEvent) []preemption {
	var rows []preemption
	giving := map[string]int{}   // victim ID -> row awaiting its requeue
	resuming := map[string]int{} // victim ID -> row awaiting its resume
	for _, e := range evs {
		switch e.Kind {
		case queue.FeedPreempt:
			rows = append(rows, preemption{At: e.At, Urgent: c.ref(e.ID), Victim: c.ref(e.Victim),
				UrgentLevel: c.q.LevelName(e.Level), VictimLevel: c.q.LevelName(e.VictimLevel), Worker: e.Worker,
				Waited: e.Waited})
			giving[e.Victim] = len(rows) - 1
			delete(resuming, e.Victim)
		case queue.FeedGaveWay:
			i, ok := giving[e.ID]
			if !ok {
				continue
			}
			delete(giving, e.ID)
			r := &rows[i]
			r.GaveWay, r.GaveWayIn, r.Ran = true, max(e.At.Sub(r.At), 0), e.Ran
			r.Checkpoint, r.CheckpointReported = e.CheckpointSeq, true
			resuming[e.ID] = i
		case queue.FeedResumed:
			i, ok := resuming[e.ID]
			if !ok {
				continue
			}
			delete(resuming, e.ID)
			r := &rows[i]
			gaveAt := r.At.Add(r.GaveWayIn)
			r.Resumed, r.ResumedAt, r.ResumedAfter, r.ResumedOn = true, e.At, max(e.At.Sub(gaveAt), 0), e.Worker
			r.VictimPreemptions, r.ResumedCheckpoint = e.Preemptions, e.CheckpointSeq
		case queue.FeedCanceled:
			if i, ok := giving[e.ID]; ok {
				delete(giving, e.ID)
				rows[i].Canceled = true
			}
			if i, ok := resuming[e.ID]; ok {
				delete(resuming, e.ID)
				rows[i].Canceled = true
			}
		}
	}
	return rows
}

// taskFeed returns the preemptions task id took part in, newest first,
// and its cancel when the feed still has it.
func (c *Console) taskFeed(ctx context.Context, id string) ([]preemption, *cancellation) {
	evs, err := c.q.Preemptions(ctx, "", feedRead)
	if err != nil {
		return nil, nil
	}
	var canceled *cancellation
	for _, e := range evs {
		if e.Kind == queue.FeedCanceled && e.ID == id {
			canceled = &cancellation{At: e.At, Task: c.ref(id), Level: c.q.LevelName(e.Level), Worker: e.Worker}
		}
	}
	var out []preemption
	rows := c.joinFeed(evs)
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Urgent.ID == id || rows[i].Victim.ID == id {
			out = append(out, rows[i])
		}
	}
	return out, canceled
}
