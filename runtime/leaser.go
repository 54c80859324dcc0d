package runtime

// goLease runs a lease call (fn) on a goroutine of its own: an idle caller
// goroutine if there is one, else a new one. A goroutine started per call
// grew its stack through go-redis anew every time (runtime.newstack was
// about 9% of the CPU of a drain at Concurrency 16); a caller keeps its
// stack from call to call. leaseWG counts the callers, so the dispatcher
// waits for the calls in flight as before.
func (r *Runtime) goLease(fn func()) {
	select {
	case r.leaseIdle <- fn:
		return
	default:
	}
	r.callers.Add(1)
	r.leaseWG.Add(1)
	go r.caller(fn)
}

// caller runs fn, then waits for the next lease call until leasing stops.
// Callers beyond maxLeasesInFlight (started while another was between
// two calls) end after their call, so that an idle runtime keeps at most
// that many.
func (r *Runtime) caller(fn func()) {
	defer r.leaseWG.Done()
	for {
		fn()
		if r.callers.Add(-1) >= maxLeasesInFlight {
			return
		}
		r.callers.Add(1)
		select {
		case fn = <-r.leaseIdle:
		case <-r.stopLease:
			r.callers.Add(-1)
			return
		}
	}
}
