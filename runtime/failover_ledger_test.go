package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/overtake/overtake/queue"
)

// enqueueLedger is the failover test's record of the handlers' runs, kept in the
// test process (not in Redis, which the failover may roll back).
type enqueueLedger struct {
	mu       sync.Mutex
	running  map[string]int       // runs of a task in progress
	runs     map[string]int       // successful runs of a task
	started  map[string]time.Time // first start of a task
	overlaps []string             // a task started while another run of it was in progress
}

func newFoLedger() *enqueueLedger {
	return &enqueueLedger{running: map[string]int{}, runs: map[string]int{}, started: map[string]time.Time{}}
}

// handle is the handler: it records the run, works for d (or until
// cancelled), and records a success.
func (l *enqueueLedger) handle(ctx context.Context, id string, d time.Duration) error {
	l.mu.Lock()
	if l.running[id] > 0 {
		l.overlaps = append(l.overlaps, id)
	}
	l.running[id]++
	if _, ok := l.started[id]; !ok {
		l.started[id] = time.Now()
	}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.running[id]--
		l.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d): // the task's work
	}
	l.mu.Lock()
	l.runs[id]++
	l.mu.Unlock()
	return nil
}

// missing returns the IDs of ids that never ran to success.
func (l *enqueueLedger) missing(ids []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, id := range ids {
		if l.runs[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

// firstStartAfter returns the earliest first start of a task after t.
func (l *enqueueLedger) firstStartAfter(t time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, s := range l.started {
		if s.After(t) && (first.IsZero() || s.Before(first)) {
			first = s
		}
	}
	return first
}

// ledgerProducer enqueues the failover test's tasks, each with an explicit ID
// (a retry after a lost reply cannot duplicate it), on a queue client with
// WaitReplicas 1: an Enqueue that returns nil was confirmed by the replica.
type ledgerProducer struct {
	q *queue.Client

	mu          sync.Mutex
	acked       map[string]time.Time // enqueue acknowledged (or already there), when
	unconfirmed map[string]bool      // acked, but not confirmed by the replica
	failures    int                  // Enqueue calls that failed (and were retried)
}

// enqueue enqueues one task, retrying for up to 20 s. ErrNotReplicated
// means the primary has the task but the replica did not confirm it;
// ErrDuplicateTask after a failed attempt means an earlier attempt landed,
// unconfirmed as far as the producer knows.
func (p *ledgerProducer) enqueue(ctx context.Context, id string, level int) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := p.q.Enqueue(cctx, queue.NewTask("fo", []byte(fmt.Sprint(level))), queue.ID(id), queue.Level(level))
		cancel()
		if err == nil || errors.Is(err, queue.ErrNotReplicated) || errors.Is(err, queue.ErrDuplicateTask) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.acked[id] = time.Now()
			if err != nil {
				p.unconfirmed[id] = true
			}
			return nil
		}
		p.mu.Lock()
		p.failures++
		p.mu.Unlock()
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("enqueue %s: %w", id, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond): // Redis failing over: retry shortly
		}
	}
}

// feed enqueues n tasks at rate per second, levels 0, 1 and 2 in turn (one
// in three urgent), and closes half once half of them are acknowledged.
func (p *ledgerProducer) feed(ctx context.Context, n int, rate float64, half chan<- struct{}) error {
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d): // the steady rate
			}
		}
		if err := p.enqueue(ctx, fmt.Sprintf("fo-%d", i), i%3); err != nil {
			return err
		}
		if i == n/2 {
			close(half)
		}
	}
	return nil
}

// ackedIDs returns the acknowledged tasks' IDs, and whether each was
// confirmed by a replica.
func (p *ledgerProducer) ackedIDs() (confirmed, unconfirmed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range p.acked {
		if p.unconfirmed[id] {
			unconfirmed = append(unconfirmed, id)
		} else {
			confirmed = append(confirmed, id)
		}
	}
	sort.Strings(confirmed)
	sort.Strings(unconfirmed)
	return confirmed, unconfirmed
}

// ledgerLatencies returns the start latency (first start minus enqueue ack) of
// the tasks acknowledged after t, sorted.
func ledgerLatencies(p *ledgerProducer, l *enqueueLedger, after time.Time) []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for id, at := range p.acked {
		if s, ok := l.started[id]; ok && at.After(after) {
			out = append(out, max(s.Sub(at), 0))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// failoverProbe measures the wake-up path through the failover apart from the
// producer's backlog: it enqueues a task every 25 to 50 ms on a queue of
// its own, which a runtime of its own (one FailoverClient, the default
// settings) runs, so no backlog ever holds a probe's slot. A probe's
// latency is its first start minus the return of its Enqueue.
type failoverProbe struct {
	q     *queue.Client
	tag   string        // in every probe's ID ("probe-<tag><n>"), so that two probes' IDs differ
	first chan struct{} // closed at the first start

	mu       sync.Mutex
	enqueued map[string]time.Time // Enqueue returned nil, when
	started  map[string]time.Time // first start
	failures int                  // Enqueue calls that failed (not retried)
}

func newFoProbe(q *queue.Client) *failoverProbe {
	return &failoverProbe{q: q, first: make(chan struct{}), enqueued: map[string]time.Time{}, started: map[string]time.Time{}}
}

// handle is the probe runtime's handler: it records the start.
func (p *failoverProbe) handle(_ context.Context, tk *queue.TaskInfo) error {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.started[tk.ID]; !ok {
		if len(p.started) == 0 {
			close(p.first)
		}
		p.started[tk.ID] = now
	}
	return nil
}

// run enqueues probes until ctx ends or until after has passed since the
// first probe started. A failed Enqueue is not retried: the next probe
// comes 25 to 50 ms later.
func (p *failoverProbe) run(ctx context.Context, after time.Duration) {
	var stop time.Time
	for i := 0; ctx.Err() == nil; i++ {
		if stop.IsZero() {
			select {
			case <-p.first:
				stop = time.Now().Add(after)
			default:
			}
		}
		if !stop.IsZero() && time.Now().After(stop) {
			return
		}
		id := fmt.Sprintf("probe-%s%d", p.tag, i)
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := p.q.Enqueue(cctx, queue.NewTask("probe", nil), queue.ID(id))
		cancel()
		at := time.Now()
		p.mu.Lock()
		if err == nil {
			p.enqueued[id] = at
		} else {
			p.failures++
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(25*time.Millisecond + rand.N(25*time.Millisecond)): // the probes' pace
		}
	}
}

// notStarted returns the probes enqueued that have not started.
func (p *failoverProbe) notStarted() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id := range p.enqueued {
		if _, ok := p.started[id]; !ok {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// latencies returns the start latency of the probes enqueued after t,
// sorted.
func (p *failoverProbe) latencies(after time.Time) []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Duration
	for id, at := range p.enqueued {
		if s, ok := p.started[id]; ok && at.After(after) {
			out = append(out, max(s.Sub(at), 0))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// firstStart returns the earliest start of a probe.
func (p *failoverProbe) firstStart() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first time.Time
	for _, s := range p.started {
		if first.IsZero() || s.Before(first) {
			first = s
		}
	}
	return first
}

// slow describes the probes that took over d to start: when each was
// enqueued after from, and its latency.
func (p *failoverProbe) slow(from time.Time, d time.Duration) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	type probe struct{ at, lat time.Duration }
	var out []probe
	for id, at := range p.enqueued {
		if s, ok := p.started[id]; ok && s.Sub(at) > d {
			out = append(out, probe{at.Sub(from), s.Sub(at)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at < out[j].at })
	var b strings.Builder
	for _, o := range out {
		fmt.Fprintf(&b, " %v:%v", o.at.Round(time.Millisecond), o.lat.Round(time.Millisecond))
	}
	return b.String()
}

// slowCount counts the probes enqueued after from that took over d to
// start, and returns when the last of them was enqueued.
func (p *failoverProbe) slowCount(from time.Time, d time.Duration) (n int, last time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, at := range p.enqueued {
		if s, ok := p.started[id]; ok && at.After(from) && s.Sub(at) > d {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, last
}
