package console

import (
	"context"
	"net/url"
	"time"

	"github.com/overtake/overtake/queue"
)

// deadRow is one dead letter.
type deadRow struct {
	Ref      taskRef
	Type     string
	Level    string
	Attempts int
	Error    string
	Enqueued time.Time
}

type deadData struct {
	Rows  []deadRow
	Pager pager
	Back  string // this page, for the actions to come back to
}

func (c *Console) deadView(ctx context.Context, q url.Values) (any, error) {
	off, err := intParam(q, "offset", 0, 0, maxOffset)
	if err != nil {
		return nil, err
	}
	st, err := c.q.Stats(ctx)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, l := range st.Levels {
		total += l.Dead
	}
	ts, err := c.q.DeadTasks(ctx, off, pageSize)
	if err != nil {
		return nil, err
	}
	d := &deadData{Back: "dead?offset=" + q.Get("offset")}
	for _, t := range ts {
		d.Rows = append(d.Rows, deadRow{Ref: c.ref(t.ID), Type: t.Type, Level: c.q.LevelName(t.Level),
			Attempts: t.Attempt, Error: t.LastError, Enqueued: t.EnqueuedAt})
	}
	// The dead counters may lag the set by a task being requeued; never
	// show fewer than are listed.
	total = max(total, off+int64(len(d.Rows)))
	d.Pager = newPager("dead", q, off, int64(len(d.Rows)), total)
	return d, nil
}

// taskData is the task page.
type taskData struct {
	T           *queue.TaskDetail // with its lease, which the page shows
	Ref         taskRef
	Level       string
	Original    string
	Payload     shown
	Checkpoint  shown
	Result      shown // what the handler stored (handlers.SetResult)
	Runs        int
	Preemptions []preemption
	Problem     string // the record could not be fully decoded
	Now         time.Time
	Canceled    *cancellation // its cancel, when the feed still has it
	Cancelable  bool          // waiting or running: the cancel button applies
	Back        string        // this page, for the cancel button to come back to
}

func (c *Console) taskView(ctx context.Context, q url.Values) (any, error) {
	id := q.Get("id")
	if id == "" {
		return nil, badRequest("id is missing: want /task?id=<task ID>")
	}
	if len(id) > 512 {
		return nil, badRequest("id is %d bytes long; task IDs this console shows are at most 512", len(id))
	}
	t, err := c.q.InspectDetail(ctx, id)
	if t == nil {
		return nil, err
	}
	d := &taskData{T: t, Ref: c.ref(id), Level: c.q.LevelName(t.Level), Original: c.q.LevelName(t.OriginalLevel),
		Payload: show(t.Payload), Checkpoint: show(t.Checkpoint), Result: show(t.Result), Now: time.Now(),
		// Every run ends in a failure, a preemption or a recovery, but the
		// running one.
		Runs: t.Attempt + t.Preemptions + t.Recoveries}
	if t.State == queue.StateActive {
		d.Runs++
	}
	switch t.State {
	case queue.StatePending, queue.StateScheduled, queue.StateRetry, queue.StateActive:
		d.Cancelable, d.Back = !t.ResultOnly, backToTask(id)
	}
	if err != nil {
		d.Problem = err.Error()
	}
	d.Preemptions, d.Canceled = c.taskFeed(ctx, id)
	if d.Canceled != nil && d.Canceled.Worker != "" {
		d.Runs++ // it was canceled while it ran: that run ended so
	}
	return d, nil
}
