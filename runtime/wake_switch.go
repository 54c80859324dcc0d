package runtime

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// checkSubscription checks the wake-up subscription at once and then
// every switchCheckEvery for switchCheckFor (a call while that lasts
// makes it last switchCheckFor from then): when an outage ends, or when
// the sentinels announce a failover, the commands may reach another
// server than before, now or once go-redis's FailoverClient hears of the
// failover (its one sentinel may learn of it seconds after another),
// while the subscription, which saw no failure, stays on the old one. A
// check whose message reaches no one closes the subscription, and its
// listener subscribes again. It costs at most
// switchCheckFor/switchCheckEvery PUBLISHes per outage or failover,
// nothing while none happens.
func (w *wakeListener) checkSubscription(ctx context.Context) {
	w.switched.run(ctx, time.Now().Add(switchCheckFor), switchCheckEvery, w.checkOnce)
}

// switchCheckFor is how long the subscription is checked after an outage
// ends or a failover is announced, switchCheckEvery how often: a task
// enqueued a second after a failover must start within 100 ms. 10 s is as
// long as a demoted primary that lives on stays a primary, until the
// sentinels make it a replica: a fail-back within it is seen at once,
// one after it needs the sentinels' hello.
const (
	switchCheckFor   = 10 * time.Second
	switchCheckEvery = 100 * time.Millisecond
)

// checkOnce checks the wake-up subscription once, if its subscription to
// the check channel is confirmed, and closes it if the check message
// reaches no one. It reports whether checking can go on: not if the
// listener did not start, the ACL refuses the check channel or ctx ended.
func (w *wakeListener) checkOnce(ctx context.Context) bool {
	sub := w.sub.Load()
	if sub == nil || w.checkChannel() == "" || ctx.Err() != nil {
		return false
	}
	if !w.live.Load() || w.redis.down() {
		return true // (re)subscribing, or an outage: nothing to check yet, no call to add to the probe's
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if errors.Is(w.publishCheck(ctx), errSubElsewhere) && w.live.Swap(false) {
		w.subElsewhere.Store(true)
		_ = sub.Close()
	}
	return true
}

// sentinelHello is the channel on which every sentinel publishes, every
// 2 s, on every node of the group it watches, who it is and which node is
// the master, as of which config epoch.
const sentinelHello = "__sentinel__:hello"

// helloChannel is sentinelHello when the client is a FailoverClient and
// no ACL refused the channel, else "".
func (w *wakeListener) helloChannel() string {
	if !w.hello.Load() || w.noHello.Load() {
		return ""
	}
	return sentinelHello
}

// heardHello reads a sentinel's hello message, first the first that the
// subscription heard: that one, and one naming a master config epoch
// higher than any before, start checkSubscription. A subscription made
// as a failover went on may have reached the old primary, and its hellos
// then name the new epoch already.
func (w *wakeListener) heardHello(ctx context.Context, payload string, first bool) {
	epoch, ok := helloEpoch(payload)
	if !ok {
		return
	}
	newer := false
	for last := w.epoch.Load(); epoch > last; last = w.epoch.Load() {
		if newer = w.epoch.CompareAndSwap(last, epoch); newer {
			break
		}
	}
	if first || newer {
		go w.checkSubscription(ctx)
	}
}

// helloEpoch returns the master config epoch of a sentinel's hello:
// "ip,port,runid,current_epoch,master_name,master_ip,master_port,master_config_epoch".
func helloEpoch(payload string) (int64, bool) {
	f := strings.Split(payload, ",")
	if len(f) != 8 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[7], 10, 64)
	return n, err == nil && n >= 0
}

// isFailoverClient reports whether rdb is a go-redis FailoverClient (which
// names its address "FailoverClient"): its primary is the sentinels'.
func isFailoverClient(rdb redis.UniversalClient) bool {
	c, ok := rdb.(*redis.Client)
	return ok && c.Options().Addr == "FailoverClient"
}

// switchChecks runs one series of checks at a time: until a deadline,
// which a new series pushes back.
type switchChecks struct {
	mu      sync.Mutex
	running bool
	until   time.Time
}

// run calls check at once and every every until until (or a later
// deadline given meanwhile), ctx ends or check returns false. If a series
// runs already, it takes until as its deadline, if later, and returns.
func (s *switchChecks) run(ctx context.Context, until time.Time, every time.Duration, check func(context.Context) bool) {
	s.mu.Lock()
	s.until = maxTime(s.until, until)
	if s.running {
		s.mu.Unlock()
		return
	}
	s.running = true
	s.mu.Unlock()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		ok := check(ctx)
		s.mu.Lock()
		if !ok || ctx.Err() != nil || !time.Now().Before(s.until) { // decided and ended under the lock
			s.running = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// maxTime is the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
