package runtime

import (
	"sync"
	"sync/atomic"
)

// leaseCallers runs the dispatcher's lease calls (and its probe) off the
// dispatcher's goroutine, and counts them so that the dispatcher waits for
// the calls in flight as it stops. A goroutine started per call grew its
// stack through go-redis anew every time (runtime.newstack was about 9%
// of the CPU of a drain at Concurrency 16); a caller keeps its stack from
// call to call.
type leaseCallers struct {
	halt  <-chan struct{} // closed when leasing stops: idle callers end
	idle  chan func()     // hands a call to an idle caller
	count atomic.Int32    // the caller goroutines
	wg    sync.WaitGroup  // the calls in flight and their callers
}

// newLeaseCallers returns the callers of a dispatcher that stops leasing
// when halt is closed.
func newLeaseCallers(halt <-chan struct{}) *leaseCallers {
	return &leaseCallers{halt: halt, idle: make(chan func())}
}

// call runs a lease call (fn) on a goroutine of its own: an idle caller
// goroutine if there is one, else a new one.
func (c *leaseCallers) call(fn func()) {
	select {
	case c.idle <- fn:
		return
	default:
	}
	c.count.Add(1)
	c.wg.Add(1)
	go c.caller(fn)
}

// once runs fn on a goroutine that is no caller (the probe), counted with
// the calls in flight.
func (c *leaseCallers) once(fn func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
}

// wait waits for the calls in flight and the callers, once leasing
// stopped.
func (c *leaseCallers) wait() { c.wg.Wait() }

// caller runs fn, then waits for the next lease call until leasing stops.
// Callers beyond maxLeasesInFlight (started while another was between
// two calls) end after their call, so that an idle runtime keeps at most
// that many.
func (c *leaseCallers) caller(fn func()) {
	defer c.wg.Done()
	for {
		fn()
		if c.count.Add(-1) >= maxLeasesInFlight {
			return
		}
		c.count.Add(1)
		select {
		case fn = <-c.idle:
		case <-c.halt:
			c.count.Add(-1)
			return
		}
	}
}
