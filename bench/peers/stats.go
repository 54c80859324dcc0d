package main

import (
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// median is the middle value of xs (the mean of the two middle ones for
// an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile is the p-th percentile (0..100) of ds by the nearest-rank
// method, in milliseconds; 0 for none.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1 // ceil(n·p/100), 1-based
	rank = min(max(rank, 0), len(s)-1)
	return float64(s[rank]) / float64(time.Millisecond)
}

// counter counts handler runs and closes done at the want-th.
type counter struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func newCounter(want int) *counter { return &counter{want: int64(want), done: make(chan struct{})} }

// hit counts one run; its signature is a system's ran callback.
func (c *counter) hit([]byte) {
	if c.n.Add(1) == c.want {
		close(c.done)
	}
}

// await waits for done, and dies after limit.
func await(done <-chan struct{}, limit time.Duration, what string) {
	select {
	case <-done:
	case <-time.After(limit):
		die(fmt.Errorf("%s: not done after %v", what, limit))
	}
}

// sample is a handler start of a latency workload: which sample (the
// task's payload) and when.
type sample struct {
	id int
	at time.Time
}

func newSample(payload []byte) sample {
	id, err := strconv.Atoi(string(payload))
	if err != nil {
		id = -1
	}
	return sample{id: id, at: time.Now()}
}

// waitFor waits for sample id to start and returns its latency from sent
// (0 if it started before sent, i.e. before Enqueue returned). Starts of
// earlier samples, late after their own wait was capped, are skipped.
// After limit it returns limit and false.
func waitFor(started <-chan sample, id int, sent time.Time, limit time.Duration) (time.Duration, bool) {
	timeout := time.After(limit - time.Since(sent))
	for {
		select {
		case s := <-started:
			if s.id == id {
				return max(s.at.Sub(sent), 0), true
			}
		case <-timeout:
			return limit, false
		}
	}
}
