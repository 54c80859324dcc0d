package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/overtake/overtake/queue"
)

// The outcomes of one cancel, as --json names them.
const (
	cancelCanceled  = "canceled"         // it was waiting (or its handler has already returned): it will not run
	cancelRequested = "cancel_requested" // it is running: it ends when its handler returns
	cancelAlready   = "already_canceled" // it was canceled before
	cancelLost      = "done"             // it was running and its handler succeeded first
	cancelFinished  = "finished"         // it was done or dead: nothing to cancel
	cancelNotFound  = "not_found"        // no such task in the queue
	cancelFailed    = "error"            // Redis could not be asked
)

// cancelResult is what cancel did to one task; "cancel --json" prints
// them.
type cancelResult struct {
	ID        string `json:"id"`
	Outcome   string `json:"outcome"`
	Was       string `json:"was,omitempty"`   // the state before the cancel
	State     string `json:"state,omitempty"` // the state after it
	Level     *int   `json:"level,omitempty"`
	LevelName string `json:"level_name,omitempty"`
	Worker    string `json:"worker,omitempty"` // the worker that ran it
	Error     string `json:"error,omitempty"`
}

// cmdCancel cancels tasks by ID: a waiting one at once, a running one
// when its handler returns.
func cmdCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cancel", "[--json] [flags] TASK_ID...", stderr)
	rf := addRedisFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for machines: the outcome of each task")
	ids, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return usageErr("a task ID is required")
	}
	return withQueue(ctx, rf, func(q *queue.Client) error {
		var errs []error
		results := make([]cancelResult, 0, len(ids))
		for _, id := range ids {
			r, err := cancelOne(ctx, q, id)
			switch {
			case err != nil:
				errs = append(errs, err)
				r.Error = message(err)
			case !*asJSON:
				fmt.Fprintln(stdout, r.text())
			}
			results = append(results, r)
		}
		if *asJSON {
			cfg := q.Config()
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(map[string]any{"namespace": cfg.Namespace, "queue": cfg.Name, "tasks": results}); err != nil {
				return err
			}
		}
		return errors.Join(errs...)
	})
}

// cancelOne cancels task id of q and reads its state before and after, to
// say what the cancel did. The error is the cancel's: for a finished task
// it names the state, for an unknown one the queue searched.
func cancelOne(ctx context.Context, q *queue.Client, id string) (cancelResult, error) {
	r := cancelResult{ID: id}
	before, err := q.InspectDetail(ctx, id)
	if err == nil && before != nil {
		r.Was = string(before.State)
		r.Worker = before.Worker
		r.setLevel(q, before.Level)
	}
	err = q.Cancel(ctx, id)
	switch {
	case errors.Is(err, queue.ErrTaskNotFound):
		cfg := q.Config()
		r.Outcome = cancelNotFound
		return r, &cancelError{fmt.Sprintf("task not found: %q in queue %q (namespace %q)", id, cfg.Name, cfg.Namespace), err}
	case errors.Is(err, queue.ErrTaskFinished):
		r.Outcome, r.State = cancelFinished, r.Was
		state := r.Was
		if state == "" {
			state = "finished"
		}
		return r, &cancelError{fmt.Sprintf("task finished: %q is %s; there is nothing to cancel", id, state), err}
	case err != nil:
		r.Outcome = cancelFailed
		return r, err
	}
	after, err := q.InspectDetail(ctx, id)
	switch {
	case err == nil && after != nil:
		r.State = string(after.State)
		r.setLevel(q, after.Level)
		if after.Worker != "" {
			r.Worker = after.Worker
		}
	case errors.Is(err, queue.ErrTaskNotFound):
		// The record is gone: its handler succeeded and the ack deleted
		// it, or the canceled record was not retained (Config.Retention).
		r.State = "gone"
	default:
		r.State = "unknown"
	}
	switch {
	case r.Was == string(queue.StateCanceled):
		r.Outcome = cancelAlready
	case r.State == string(queue.StateCanceled):
		r.Outcome = cancelCanceled
	case r.State == string(queue.StateDone) && r.Was == string(queue.StateActive):
		r.Outcome = cancelLost
	case r.State == "gone" && r.Was != string(queue.StateActive):
		r.Outcome = cancelCanceled // canceled, its record not retained
	default:
		r.Outcome = cancelRequested
	}
	return r, nil
}

// cancelError is a cancel that failed, said in the CLI's words; errors.Is
// sees the library's error.
type cancelError struct {
	msg string
	err error
}

func (e *cancelError) Error() string { return e.msg }
func (e *cancelError) Unwrap() error { return e.err }

func (r *cancelResult) setLevel(q *queue.Client, l int) {
	r.Level, r.LevelName = &l, q.LevelName(l)
}

// text is the line cancel prints for a cancel that did not fail.
func (r cancelResult) text() string {
	on := ""
	if r.Worker != "" {
		on = " on worker " + r.Worker
	}
	switch r.Outcome {
	case cancelAlready:
		return fmt.Sprintf("%s was already canceled; nothing to do", r.ID)
	case cancelCanceled:
		if r.Was == string(queue.StateActive) {
			return fmt.Sprintf("canceled %s: it was running%s and its handler has returned; it will not run again", r.ID, on)
		}
		return fmt.Sprintf("canceled %s: it was %s at level %s and will not run", r.ID, wasState(r.Was), r.LevelName)
	case cancelLost:
		return fmt.Sprintf("cancel requested for %s, but its handler%s succeeded first: the task is done, not canceled", r.ID, on)
	default:
		return fmt.Sprintf("cancel requested for %s, running%s: its context is cancelled now, and the task ends "+
			"canceled when its handler returns (done, if it had already succeeded); overtake inspect %s says which", r.ID, on, r.ID)
	}
}

// wasState says a waiting state in words.
func wasState(s string) string {
	switch queue.State(s) {
	case queue.StateScheduled:
		return "scheduled"
	case queue.StateRetry:
		return "waiting to retry"
	case "":
		return "waiting"
	}
	return s
}
