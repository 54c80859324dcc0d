package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/overtake/overtake/internal/telemetry"
)

// printer writes the demo's lines to one writer from many goroutines, each
// prefixed with the time since the demo started.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	names []string // level names, lowest first
}

// Column widths of a task line.
const (
	idWidth    = 6
	levelWidth = 6
	typeWidth  = 7
)

func (p *printer) stamp() string {
	return fmt.Sprintf("%8s", fmt.Sprintf("+%.3fs", time.Since(p.start).Seconds()))
}

// task prints one line about task id.
func (p *printer) task(id string, level int, typ, format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s  %-*s  %-*s  %-*s  %s\n", p.stamp(), idWidth, short(id), levelWidth, p.level(level),
		typeWidth, typ, fmt.Sprintf(format, a...))
}

// note prints one line from who (the producer, the runtime).
func (p *printer) note(who, format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s  %-*s  %s\n", p.stamp(), idWidth+levelWidth+typeWidth+4, who, fmt.Sprintf(format, a...))
}

// text prints lines as they are.
func (p *printer) text(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, a...)
}

func (p *printer) level(l int) string {
	if l >= 0 && l < len(p.names) {
		return p.names[l]
	}
	return fmt.Sprint(l)
}

// short returns the first characters of a task ID.
func short(id string) string {
	if len(id) > idWidth {
		return id[:idWidth]
	}
	return id
}

// takenPrinter is a span processor that prints a "taken" line when the
// runtime starts the process span of a task. The runtime starts that span
// on its dispatcher goroutine in lease order, before the handler runs, so
// the lines show exactly the order in which tasks were taken. It also
// counts the process spans not yet ended, so that a part of the demo can
// end its root span after every run in it.
type takenPrinter struct {
	p *printer

	mu    sync.Mutex
	open  int
	ended chan struct{} // a process span ended; capacity 1
}

var _ sdktrace.SpanProcessor = (*takenPrinter)(nil)

func newTakenPrinter(p *printer) *takenPrinter {
	return &takenPrinter{p: p, ended: make(chan struct{}, 1)}
}

// isProcess reports whether s is a process span (a run of a task).
func isProcess(s sdktrace.ReadOnlySpan) bool {
	for _, kv := range s.Attributes() {
		if kv.Key == telemetry.OperationNameKey {
			return kv.Value.AsString() == telemetry.OperationProcess
		}
	}
	return false
}

// OnStart prints the task of a process span.
func (tp *takenPrinter) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if !isProcess(s) {
		return
	}
	tp.mu.Lock()
	tp.open++
	tp.mu.Unlock()
	var id, typ string
	level := -1
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case telemetry.MessageIDKey:
			id = kv.Value.AsString()
		case telemetry.TaskTypeKey:
			typ = kv.Value.AsString()
		case telemetry.LevelKey:
			level = int(kv.Value.AsInt64())
		}
	}
	tp.p.task(id, level, typ, "taken")
}

// OnEnd counts an ended process span.
func (tp *takenPrinter) OnEnd(s sdktrace.ReadOnlySpan) {
	if !isProcess(s) {
		return
	}
	tp.mu.Lock()
	tp.open--
	tp.mu.Unlock()
	select {
	case tp.ended <- struct{}{}:
	default:
	}
}

// waitRunsEnded returns once no process span is open, or with ctx's error.
func (tp *takenPrinter) waitRunsEnded(ctx context.Context) error {
	for {
		tp.mu.Lock()
		open := tp.open
		tp.mu.Unlock()
		if open == 0 {
			return nil
		}
		select {
		case <-tp.ended:
		case <-ctx.Done():
			return fmt.Errorf("%d runs still open: %w", open, context.Cause(ctx))
		}
	}
}

// Shutdown does nothing.
func (*takenPrinter) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing.
func (*takenPrinter) ForceFlush(context.Context) error { return nil }

// levelTally accumulates the summary of one level.
type levelTally struct {
	done    int
	runs    int
	waitSum time.Duration
	maxWait time.Duration
}

// summary prints the closing table.
func (d *demo) summary() {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.p
	p.text("\n== Summary after %.2fs\n", time.Since(p.start).Seconds())
	p.text("  %-8s %5s %5s %11s %10s\n", "level", "done", "runs", "mean wait", "max wait")
	for l := len(d.tally) - 1; l >= 0; l-- {
		t := d.tally[l]
		mean := time.Duration(0)
		if t.runs > 0 {
			mean = t.waitSum / time.Duration(t.runs)
		}
		p.text("  %-8s %5d %5d %11s %10s\n", p.level(l), t.done, t.runs,
			roundDuration(mean), roundDuration(t.maxWait))
	}
	rs := d.rt.Stats()
	p.text("  preemptions: %d (runtime counted %d), resumes: %d, checkpoints saved: %d\n",
		d.preemptions, rs.Preempted, d.resumes, d.checkpoints)
	if d.urgentWait > 0 {
		p.text("  the urgent task waited %s for a slot while all %d workers were busy\n",
			roundDuration(d.urgentWait), d.opts.Concurrency)
	}
	p.text("  waits are measured from the moment a task became pending (enqueued or requeued)\n")
}

// levels names levels, joined by sep.
func (p *printer) levels(levels []int, sep string) string {
	names := make([]string, len(levels))
	for i, l := range levels {
		names[i] = p.level(l)
	}
	return strings.Join(names, sep)
}
