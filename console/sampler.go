package console

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// sample is one reading of the queue for the charts.
type sample struct {
	At      time.Time
	Pending []int64   // per level
	Rate    []float64 // processed per second, per level
	Running []int64   // per level
}

// history keeps the last samples in a ring, and when each running task's
// checkpoint sequence was first seen (the queue stores no save time).
type history struct {
	mu     sync.Mutex
	levels int
	ring   []sample
	next   int
	full   bool
	cpSeen map[string]cpSeen
}

// cpSeen is when the console first saw a task at a checkpoint sequence.
type cpSeen struct {
	Seq int64
	At  time.Time
}

func newHistory(levels, size int) *history {
	return &history{levels: levels, ring: make([]sample, max(size, 2)), cpSeen: map[string]cpSeen{}}
}

func (h *history) add(s sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring[h.next] = s
	h.next = (h.next + 1) % len(h.ring)
	if h.next == 0 {
		h.full = true
	}
}

// samples returns the samples oldest first.
func (h *history) samples() []sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]sample(nil), h.ring[:h.next]...)
	}
	return append(append([]sample(nil), h.ring[h.next:]...), h.ring[:h.next]...)
}

// checkpointAge returns how long ago the console first saw task id at
// sequence seq (known false when it saw it only now), recording it.
func (h *history) checkpointAge(id string, seq int64, now time.Time) (age time.Duration, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.cpSeen[id]
	if !ok || s.Seq != seq {
		h.cpSeen[id] = cpSeen{Seq: seq, At: now}
		return 0, ok // a change seen now: the save happened since the last look
	}
	return now.Sub(s.At), true
}

// forget drops the checkpoint records of tasks no longer running.
func (h *history) forget(running map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.cpSeen {
		if !running[id] {
			delete(h.cpSeen, id)
		}
	}
}

// trackedRunning bounds how many running tasks the sampler follows for
// checkpoint ages.
const trackedRunning = 200

// sample reads the queue every SampleInterval until Close.
func (c *Console) sample() {
	defer close(c.stopped)
	t := time.NewTicker(c.opts.SampleInterval)
	defer t.Stop()
	for {
		c.sampleOnce(c.ctx)
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *Console) sampleOnce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.SampleInterval)
	defer cancel()
	st, err := c.q.Stats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("console: sample stats", zap.Error(err))
		}
		return
	}
	s := sample{At: time.Now(), Pending: make([]int64, c.q.Levels()), Rate: make([]float64, c.q.Levels()),
		Running: make([]int64, c.q.Levels())}
	for _, l := range st.Levels {
		if l.Level < len(s.Pending) {
			s.Pending[l.Level], s.Rate[l.Level], s.Running[l.Level] = l.Pending, l.Rates.Processed, l.Active
		}
	}
	c.hist.add(s)
	tasks, _, err := c.q.Running(ctx, 0, trackedRunning)
	if err != nil {
		return
	}
	seen := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		seen[t.ID] = true
		c.hist.checkpointAge(t.ID, t.CheckpointSeq, s.At)
	}
	c.hist.forget(seen)
}
