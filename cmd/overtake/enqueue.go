package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overtake/overtake/queue"
)

// cmdEnqueue enqueues one task and prints its ID.
func cmdEnqueue(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("enqueue", "--type T [--level L] [--payload JSON] [flags]", stderr)
	rf := addRedisFlags(fs)
	rf.create = true // like a producer's queue.New
	typ := fs.String("type", "", "task type, which selects the handler (required)")
	level := fs.String("level", "", "priority level, by name (\"high\") or number; default the lowest")
	payload := fs.String("payload", "", "payload; checked to be valid JSON when it starts with { or [")
	payloadFile := fs.String("payload-file", "", "read the payload from this file (- for stdin)")
	id := fs.String("id", "", "task ID; enqueueing an ID that exists fails (default: random)")
	delay := fs.Duration("delay", 0, "run the task no earlier than this from now (e.g. 5s)")
	maxRetries := fs.Int("max-retries", -1, "failed attempts retried before dead-lettering")
	// -1 stands for "not given": -h shows the default that then applies.
	fs.Lookup("max-retries").DefValue = strconv.Itoa(queue.DefaultMaxRetries)
	timeout := fs.Duration("timeout", 0, "bound on one run of the handler (0: none)")
	notPreemptible := fs.Bool("not-preemptible", false, "never preempt this task once it runs")
	unique := fs.Duration("unique", 0, "refuse the task while an equal one (same type and payload) holds the "+
		"uniqueness lock, else take it for this long or until the task succeeds (queue.Unique; e.g. 1h)")
	class := fs.String("class", "", "logical priority class, mapped to a level by the queue's classes (instead of --level)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	if *typ == "" {
		return usageErr("--type is required")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["max-retries"] && *maxRetries < 0:
		return usageErr("--max-retries %d: must be 0 or more", *maxRetries)
	case *delay < 0:
		return usageErr("--delay %v: must not be negative", *delay)
	case *timeout < 0:
		return usageErr("--timeout %v: must not be negative", *timeout)
	case set["unique"] && *unique < time.Millisecond:
		return usageErr("--unique %v: must be at least 1ms", *unique)
	}
	body, err := readPayload(*payload, *payloadFile)
	if err != nil {
		return err
	}
	if *class != "" && *level != "" {
		return usageErr("give --level or --class, not both")
	}
	if cfg, err := rf.config(); err != nil {
		return err
	} else if _, ok := cfg.Classes[*class]; *class != "" && rf.classes != "" && !ok {
		return usageErr("--class %q: not one of --classes %q", *class, rf.classes)
	}
	q, closeFn, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	var opts []queue.Option
	switch cfg := q.Config(); {
	case *class != "":
		if _, ok := cfg.Classes[*class]; !ok {
			return usageErr("--class %q: queue %q has %s", *class, cfg.Name, classList(cfg.Classes))
		}
		opts = append(opts, queue.Class(*class))
	case *level != "":
		l, err := levelOf(cfg, *level)
		if err != nil {
			return usageErr("--level: %v", err)
		}
		opts = append(opts, queue.Level(l))
	}
	if *id != "" {
		opts = append(opts, queue.ID(*id))
	}
	if *delay > 0 {
		opts = append(opts, queue.ProcessIn(*delay))
	}
	if *maxRetries >= 0 {
		opts = append(opts, queue.MaxRetries(*maxRetries))
	}
	if *timeout > 0 {
		opts = append(opts, queue.Timeout(*timeout))
	}
	if *notPreemptible {
		opts = append(opts, queue.Preemptible(false))
	}
	if *unique > 0 {
		opts = append(opts, queue.Unique(*unique))
	}
	t, err := q.Enqueue(ctx, queue.NewTask(*typ, body), opts...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enqueued %s\n", t.ID)
	fmt.Fprintf(stdout, "  type %s, level %s (%d), %s", t.Type, q.LevelName(t.Level), t.Level, t.State)
	if t.State == queue.StateScheduled {
		fmt.Fprintf(stdout, " until %s", t.ProcessAt.Format(time.RFC3339))
	}
	fmt.Fprintf(stdout, ", %d bytes payload\n", len(t.Payload))
	return nil
}

// classList describes the classes of a queue: "no classes" or "classes
// free, paying".
func classList(classes map[string]int) string {
	if len(classes) == 0 {
		return "no classes"
	}
	return "classes " + strings.Join(slices.Sorted(maps.Keys(classes)), ", ")
}

// readPayload returns the payload from --payload or --payload-file.
func readPayload(inline, file string) ([]byte, error) {
	var body []byte
	switch {
	case inline != "" && file != "":
		return nil, usageErr("give --payload or --payload-file, not both")
	case file == "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("read payload from stdin: %w", err)
		}
		body = b
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read payload: %w", err)
		}
		body = b
	default:
		body = []byte(inline)
	}
	if t := strings.TrimSpace(string(body)); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		if !json.Valid(body) {
			var v any
			err := json.Unmarshal(body, &v)
			return nil, usageErr("payload looks like JSON but is not valid: %v", err)
		}
	}
	return body, nil
}
