package main

import (
	"github.com/overtake/overtake/internal/ckpt"

	"context"
	"errors"
	"time"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
)

// demoArgs is the payload of every demo task: simulated work in steps.
type demoArgs struct {
	Steps  int   `json:"steps"`
	StepMs int64 `json:"step_ms"`
	// Checkpoint saves the progress after every step.
	Checkpoint bool `json:"checkpoint,omitempty"`
	// Cue is the step after which the first run tells the producer where
	// it is (the producer then enqueues an urgent task).
	Cue int `json:"cue,omitempty"`
}

// demoProgress is the checkpoint of a stepped task.
type demoProgress struct {
	Step int `json:"step"`
}

func (a demoArgs) percent(step int) int { return 100 * step / max(a.Steps, 1) }

// process is the handler of every demo task type.
func (d *demo) process(ctx context.Context, t *queue.TaskInfo, a demoArgs) error {
	wait := max(time.Since(t.ReadyAt), 0)
	d.mu.Lock()
	tl := &d.tally[t.Level]
	tl.runs++
	tl.waitSum += wait
	tl.maxWait = max(tl.maxWait, wait)
	if t.ID == d.urgentID {
		d.urgentWait = wait
	}
	d.mu.Unlock()

	cur, err := checkpoint.NewCursor[demoProgress](ctx, 0)
	if err != nil {
		return handlers.SkipRetry(err)
	}
	h, _ := ckpt.FromContext(ctx)
	step := cur.Value().Step
	switch {
	case cur.Resumed():
		d.mu.Lock()
		d.resumes++
		d.mu.Unlock()
		d.p.task(t.ID, t.Level, t.Type, "resumed from %d%% (checkpoint seq %d) after waiting %s",
			a.percent(step), h.Seq(), roundDuration(wait))
	case a.Steps > 1:
		d.p.task(t.ID, t.Level, t.Type, "started after waiting %s: %d steps of %s",
			roundDuration(wait), a.Steps, time.Duration(a.StepMs)*time.Millisecond)
	}

	began := time.Now()
	timer := time.NewTimer(time.Duration(a.StepMs) * time.Millisecond)
	defer timer.Stop()
	for step < a.Steps {
		select {
		case <-ctx.Done():
			return d.stopped(ctx, t, a, cur, h)
		case <-timer.C:
		}
		step++
		timer.Reset(time.Duration(a.StepMs) * time.Millisecond)
		if a.Checkpoint && step < a.Steps {
			if err := cur.Set(ctx, demoProgress{Step: step}); err != nil {
				return err
			}
			d.mu.Lock()
			d.checkpoints++
			d.mu.Unlock()
			d.p.task(t.ID, t.Level, t.Type, "progress %3d%% (checkpoint seq %d)", a.percent(step), h.Seq())
		}
		if step == a.Cue && !cur.Resumed() {
			select {
			case d.cue <- t.ID:
			default:
			}
		}
	}

	d.mu.Lock()
	d.tally[t.Level].done++
	d.mu.Unlock()
	ran := roundDuration(time.Since(began))
	switch {
	case t.Preemptions > 0:
		d.p.task(t.ID, t.Level, t.Type, "done: 100%% after %d preemption%s, this run %s",
			t.Preemptions, plural(int64(t.Preemptions)), ran)
	case a.Steps > 1:
		d.p.task(t.ID, t.Level, t.Type, "done: 100%% in %s", ran)
	default:
		d.p.task(t.ID, t.Level, t.Type, "done (waited %s, ran %s)", roundDuration(wait), ran)
	}
	select {
	case d.finished <- t.Type: // sized for every task of the demo
	default:
	}
	return nil
}

// stopped handles a cancelled run: it saves the position reached and
// returns the cause, which requeues the task at the head of its level.
func (d *demo) stopped(ctx context.Context, t *queue.TaskInfo, a demoArgs, cur *checkpoint.Cursor[demoProgress], h *ckpt.Handle) error {
	cause := context.Cause(ctx)
	if err := cur.Flush(ctx); err != nil { // a no-op here: every step was saved
		return err
	}
	pct := a.percent(cur.Value().Step)
	switch {
	case errors.Is(cause, handlers.ErrPreempted):
		d.mu.Lock()
		d.preemptions++
		by := d.urgentID
		d.mu.Unlock()
		d.p.task(t.ID, t.Level, t.Type, "preempted at %d%% (checkpoint seq %d) for %s; back to the head of %s",
			pct, h.Seq(), short(by), d.p.level(t.Level))
	case errors.Is(cause, handlers.ErrShutdown):
		d.p.task(t.ID, t.Level, t.Type, "stopped by shutdown at %d%% (checkpoint seq %d)", pct, h.Seq())
	default:
		d.p.task(t.ID, t.Level, t.Type, "stopped at %d%%: %v", pct, cause)
	}
	return cause
}
