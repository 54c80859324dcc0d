package main

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/overtake/overtake/queue"
)

// deadRow is one dead-lettered task of "dead list --json".
type deadRow struct {
	ID         string     `json:"id"`
	Type       string     `json:"type"`
	Level      int        `json:"level"`
	LevelName  string     `json:"level_name"`
	Class      string     `json:"class,omitempty"`
	Attempts   int        `json:"failed_attempts"`
	MaxRetries int        `json:"max_retries"`
	EnqueuedAt *time.Time `json:"enqueued_at,omitempty"`
	LastError  string     `json:"last_error"`
}

// deadListJSON prints a page of dead-lettered tasks, oldest first, as one
// JSON document: the queue, the dead total, the page's offset and its
// tasks (an empty list past the end).
func deadListJSON(ctx context.Context, w io.Writer, q *queue.Client, offset, limit int64) error {
	total, tasks, err := deadPage(ctx, q, offset, limit)
	if err != nil {
		return err
	}
	rows := make([]deadRow, 0, len(tasks))
	for _, t := range tasks {
		r := deadRow{ID: t.ID, Type: t.Type, Level: t.Level, LevelName: q.LevelName(t.Level), Class: t.Class,
			Attempts: t.Attempt, MaxRetries: t.MaxRetries, LastError: t.LastError}
		if !t.EnqueuedAt.IsZero() {
			at := t.EnqueuedAt.UTC()
			r.EnqueuedAt = &at
		}
		rows = append(rows, r)
	}
	cfg := q.Config()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"namespace": cfg.Namespace, "queue": cfg.Name, "total": max(total, offset+int64(len(rows))),
		"offset": offset, "tasks": rows})
}
