package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/queue"
)

// queueRow is one queue of the queues command.
type queueRow struct {
	Queue     string         `json:"queue"`
	Levels    []levelDepth   `json:"levels"` // lowest first
	Pending   int64          `json:"pending"`
	Active    int64          `json:"in_flight"`
	Scheduled int64          `json:"scheduled"`
	Dead      int64          `json:"dead"`
	Classes   map[string]int `json:"classes,omitempty"`
	// Error says why the queue could not be read (a shape or key that is
	// corrupt, of another schema); its other fields are then empty.
	Error string `json:"error,omitempty"`
}

// levelDepth is one level's pending count in a queueRow.
type levelDepth struct {
	Level int    `json:"level"`
	Name  string `json:"name"`
	Depth int64  `json:"depth"`
}

// cmdQueues lists the queues of a namespace, from the shapes Redis holds,
// with their depths per level.
func cmdQueues(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("queues", "[--json] [flags]", stderr)
	rf := addRedisFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON for machines")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	rdb, err := rf.connect(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = rdb.Close() }()
	names, err := queue.Queues(ctx, rdb, rf.namespace)
	if err != nil {
		return err
	}
	rows := make([]queueRow, 0, len(names))
	for _, name := range names {
		row, err := readQueue(ctx, rdb, rf.namespace, name)
		if refused(err) {
			// One corrupt queue must not hide the others.
			row = queueRow{Queue: name, Error: err.Error()}
		} else if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"namespace": rf.namespace, "queues": rows})
	}
	return writeQueues(stdout, rf.namespace, rows)
}

// refused reports whether err says a queue cannot be read as it is (its
// shape or a key is corrupt, of another schema, or a config of its shape
// is not valid), not that Redis could not be asked.
func refused(err error) bool {
	return errors.Is(err, queue.ErrShapeMismatch) || errors.Is(err, queue.ErrSchema) ||
		errors.Is(err, queue.ErrCorrupt) || errors.Is(err, queue.ErrInvalidConfig)
}

// readQueue returns the row of queue name of namespace ns.
func readQueue(ctx context.Context, rdb redis.UniversalClient, ns, name string) (queueRow, error) {
	sh, err := queue.ReadShape(ctx, rdb, ns, name)
	if err != nil {
		return queueRow{}, err
	}
	q, err := queue.New(rdb, sh.Apply(queue.Config{Namespace: ns, Name: name}))
	if err != nil {
		return queueRow{}, err
	}
	st, err := q.Stats(ctx)
	if err != nil {
		return queueRow{}, err
	}
	row := queueRow{Queue: name, Classes: sh.Classes}
	for _, l := range st.Levels {
		row.Levels = append(row.Levels, levelDepth{Level: l.Level, Name: l.Name, Depth: l.Pending})
		row.Pending, row.Active, row.Scheduled, row.Dead = row.Pending+l.Pending, row.Active+l.Active,
			row.Scheduled+l.Scheduled, row.Dead+l.Dead
	}
	return row, nil
}

// writeQueues prints rows as a table, each level's depth most urgent
// first.
func writeQueues(w io.Writer, ns string, rows []queueRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(w, "namespace %q has no queues\n", ns)
		return err
	}
	fmt.Fprintf(w, "namespace %q: %d queue%s\n", ns, len(rows), plural(len(rows)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tLEVELS\tDEPTH\tIN FLIGHT\tSCHEDULED\tDEAD\tDEPTH PER LEVEL (most urgent first)")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\tunreadable: %s\n", r.Queue, r.Error)
			continue
		}
		per := make([]string, 0, len(r.Levels))
		for i := len(r.Levels) - 1; i >= 0; i-- {
			per = append(per, fmt.Sprintf("%s=%d", r.Levels[i].Name, r.Levels[i].Depth))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Queue, len(r.Levels), r.Pending, r.Active, r.Scheduled, r.Dead,
			strings.Join(per, " "))
	}
	return tw.Flush()
}
