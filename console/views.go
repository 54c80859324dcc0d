package console

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/overtake/overtake/queue"
)

// levelRow is one level on the queue page.
type levelRow struct {
	Level                             int
	Name                              string
	Pending, Running, Scheduled, Dead int64
	Canceled                          int64
	OldestWait                        time.Duration
	HasOldest                         bool
	Rates                             queue.Rates
	Paused                            string // "" when it is not paused
}

type queueData struct {
	Levels  []levelRow // most urgent first
	Workers []queue.WorkerInfo
	Charts  []chart
	Names   []levelRow // lowest first, for the pause form
	Now     time.Time
}

func (c *Console) queueView(ctx context.Context, _ url.Values) (any, error) {
	st, err := c.q.Stats(ctx)
	if err != nil {
		return nil, err
	}
	ws, err := c.q.Workers(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	d := &queueData{Workers: ws, Now: now}
	for _, l := range st.Levels {
		row := levelRow{Level: l.Level, Name: l.Name, Pending: l.Pending, Running: l.Active, Scheduled: l.Scheduled,
			Dead: l.Dead, Canceled: l.Canceled, Rates: l.Rates}
		if !l.OldestReadyAt.IsZero() {
			row.OldestWait, row.HasOldest = now.Sub(l.OldestReadyAt), true
		}
		if l.Paused != queue.NotPaused {
			row.Paused = l.Paused.String()
		}
		d.Names = append(d.Names, row)
	}
	d.Levels = slices.Clone(d.Names)
	slices.Reverse(d.Levels)
	ss := c.hist.samples()
	n := c.q.Levels()
	d.Charts = []chart{
		newChart("Pending", ss, n, c.q.LevelName, func(s sample, l int) float64 { return float64(s.Pending[l]) },
			fmtCount),
		newChart("Processed", ss, n, c.q.LevelName, func(s sample, l int) float64 { return s.Rate[l] }, fmtRate),
	}
	return d, nil
}

func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(v/1e6) + "M"
	case v >= 1e4:
		return trimFloat(v/1e3) + "k"
	}
	return trimFloat(v)
}

// runRow is one running task.
type runRow struct {
	Ref         taskRef
	Type, Level string
	Worker      string
	RunTime     time.Duration
	Preemptions int
	CpSeq       int64
	CpSize      int
	CpAge       string
}

type runningData struct {
	Rows  []runRow
	Pager pager
	Back  string // this page, for the cancel buttons to come back to
}

func (c *Console) runningView(ctx context.Context, q url.Values) (any, error) {
	off, err := intParam(q, "offset", 0, 0, maxOffset)
	if err != nil {
		return nil, err
	}
	ts, total, err := c.q.RunningDetails(ctx, off, pageSize)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	d := &runningData{Back: "running?offset=" + strconv.FormatInt(off, 10)}
	for _, t := range ts {
		r := runRow{Ref: c.ref(t.ID), Type: t.Type, Level: c.q.LevelName(t.Level), Worker: t.Worker,
			Preemptions: t.Preemptions, CpSeq: t.CheckpointSeq, CpSize: len(t.Checkpoint), CpAge: "—"}
		if !t.LeasedAt.IsZero() {
			r.RunTime = now.Sub(t.LeasedAt)
		}
		if t.CheckpointSeq > 0 {
			age, known := c.hist.checkpointAge(t.ID, t.CheckpointSeq, now)
			r.CpAge = "under " + fmtDur(c.opts.SampleInterval)
			if known && age >= c.opts.SampleInterval {
				r.CpAge = fmtDur(age)
			}
		}
		d.Rows = append(d.Rows, r)
	}
	d.Pager = newPager("running", q, off, int64(len(d.Rows)), total)
	return d, nil
}

// pendRow is one pending task.
type pendRow struct {
	Pos         int64
	Ref         taskRef
	Type        string
	Wait        time.Duration
	Attempt     int
	Preemptions int
	CpSeq       int64
}

type pendingData struct {
	Level int
	Name  string
	Rows  []pendRow
	Pager pager
}

func (c *Console) pendingView(ctx context.Context, q url.Values) (any, error) {
	l, err := c.levelParam(q, "level")
	if err != nil {
		return nil, err
	}
	off, err := intParam(q, "offset", 0, 0, maxOffset)
	if err != nil {
		return nil, err
	}
	ids, total, err := c.q.PendingPage(ctx, l, off, pageSize)
	if err != nil {
		return nil, err
	}
	ts, err := c.q.Tasks(ctx, ids)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	d := &pendingData{Level: l, Name: c.q.LevelName(l)}
	for i, t := range ts {
		d.Rows = append(d.Rows, pendRow{Pos: off + int64(i) + 1, Ref: c.ref(t.ID), Type: t.Type, Wait: now.Sub(t.ReadyAt),
			Attempt: t.Attempt, Preemptions: t.Preemptions, CpSeq: t.CheckpointSeq})
	}
	d.Pager = newPager("pending", q, off, int64(len(ids)), total)
	return d, nil
}
