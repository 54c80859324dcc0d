package runtime

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/mirror"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// wakeListener keeps the wake-up subscription: it turns each message of
// the wake channel (the level of a task that became pending, or the new
// set of paused levels) into word for the dispatcher (waker), so idle
// workers never poll Redis in a loop, and checks that the subscription
// still reaches the server the commands reach. It owns the subscription,
// the check channel's name and what it learned of them.
type wakeListener struct {
	loops      startStop
	eng        *store.Store
	log        *zap.Logger
	redis      *redisWatch
	to         waker
	maxBackoff time.Duration
	check      time.Duration // how long the subscription may stay silent
	// sub is the subscription, checkName its check channel's name;
	// noCheck says an ACL refused that channel, subElsewhere that
	// checkSubscription closed the subscription, live that the
	// subscription to the check channel is confirmed (a check may close
	// it only then: a new one, not subscribed yet, reaches no one).
	sub          atomic.Pointer[redis.PubSub]
	checkName    string
	noCheck      atomic.Bool
	subElsewhere atomic.Bool
	live         atomic.Bool
	// hello says the client is a FailoverClient: the subscription also
	// hears the sentinels' hello messages (noHello: an ACL refused their
	// channel); epoch is the highest master config epoch they named.
	hello, noHello atomic.Bool
	epoch          atomic.Int64
	switched       switchChecks
	onWake         func() // tests only: a wake-up message was turned into a signal
}

// waker is what the wake listener tells the rest of the worker.
type waker interface {
	// announced says a task of level l became pending (isLevel false:
	// the message named no level) and wakes the dispatcher.
	announced(l int, isLevel bool)
	// setPaused applies the paused levels a message carried.
	setPaused(m map[int]queue.PauseMode)
	// lookNow makes the dispatcher look for work as on its slow poll:
	// the wake-ups published while the subscription was lost are lost.
	lookNow()
	runCanceler // a cancel's message 'x'<id> (cancel.go)
}

// start subscribes, waits (within ctx, at most 5 s) for the subscription
// to be confirmed, so that no announcement made after Start returns is
// missed, and listens until stop. base bounds the subscription.
func (w *wakeListener) start(ctx, base context.Context) {
	w.hello.Store(isFailoverClient(w.eng.Redis()))
	w.epoch.Store(-1)
	sub := w.eng.Redis().Subscribe(base, w.channels()...)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := sub.Receive(rctx)
	cancel()
	if err != nil {
		w.log.Warn("wake-up subscription not confirmed; relying on the fallback poll until it is", zap.Error(err))
	}
	w.loops.start(base, func(ctx context.Context) { w.listen(ctx, sub, err) })
}

// stop closes the subscription and ends the listener.
func (w *wakeListener) stop() { w.loops.stop() }

// listen turns wake-up messages (the level of a task that became pending)
// into dispatcher signals, so idle workers never poll Redis in a loop.
// startErr is why Start did not see the subscription confirmed, if it
// did not.
//
// It keeps the subscription itself, where go-redis's channel would
// reconnect every 100 ms whatever the outage: after a failure it waits for
// its backoff and for any outage to end (the dispatcher's probe), then
// makes one attempt with a new subscription. A subscription silent for
// wakeCheckInterval is checked: the worker publishes on its CheckChannel,
// also subscribed, through its commands' connections. The subscription is
// replaced if that publish reaches no one (it is left on another server
// than the commands: an old primary that survived a failover, which
// go-redis's FailoverClient does not move it from) or if the message does
// not come within as long. Once subscribed again it makes the dispatcher
// look for work: the wake-ups published meanwhile are lost.
//
// On a FailoverClient the subscription also hears the sentinels' hello
// messages, which every sentinel publishes on every node of the group
// every 2 s, primary or replica, with the master's config epoch: one
// naming a higher epoch than any before says a failover happened, which
// the worker may not see otherwise (a switchover, a fail-back: the
// demoted primary lives on, and go-redis moves the commands, not the
// subscription). The subscription is then checked (checkSubscription).
// A hello is no wake-up: it neither counts as the channel's traffic nor
// puts off the check of a silent subscription.
func (w *wakeListener) listen(ctx context.Context, sub *redis.PubSub, startErr error) {
	// A receive blocks until a message or its timeout, whatever ctx: the
	// subscription is closed as the runtime stops, which ends it.
	cur := &w.sub
	cur.Store(sub)
	stop := context.AfterFunc(ctx, func() { _ = cur.Load().Close() })
	defer stop()
	defer func() { _ = cur.Load().Close() }()
	bo := backoff{limit: w.maxBackoff}
	confirmed := startErr == nil     // a subscription was confirmed once
	lost := false                    // none was since the last failure
	heard := confirmed               // a message came since the last failure
	pinged := false                  // a check went out since the last message
	fresh := false                   // sub is new: it subscribes on its next attempt
	quiet := time.Now().Add(w.check) // when the subscription will have been silent for check
	helloed := false                 // sub heard a sentinel's hello
	// failed replaces the subscription after err and waits before the
	// next attempt; false if the runtime stopped meanwhile. go-redis would
	// keep a connection whose read timed out (no PONG, or no answer on a
	// new connection) or on which Redis refused the SUBSCRIBE (NOPERM),
	// and not subscribe on it again.
	failed := func(err error) bool {
		w.live.Store(false)
		if w.subElsewhere.Swap(false) { // checkSubscription closed it
			err = errSubElsewhere
		}
		if redis.HasErrorPrefix(err, "NOPERM") && w.helloChannel() != "" { // the least needed goes first
			w.log.Warn("the ACL refuses the sentinels' hello channel; a failover the worker's calls do not see "+
				"(a switchover, a fail-back) moves the wake-up subscription only at its next check: allow "+
				sentinelHello+" (see docs/operations.md)", zap.Error(err))
			w.noHello.Store(true)
			bo.reset()
		} else if ch := w.checkChannel(); ch != "" && redis.HasErrorPrefix(err, "NOPERM") {
			w.log.Warn("the ACL refuses the subscription check channel; checking with PINGs, which miss a "+
				"subscription left on an old primary: allow "+ch+" (see docs/operations.md)", zap.Error(err))
			w.noCheck.Store(true)
			bo.reset()
		}
		old := sub
		sub, fresh = w.eng.Redis().Subscribe(ctx), true
		cur.Store(sub)
		_ = old.Close()
		heard, pinged, helloed = false, false, false
		if !lost && confirmed {
			w.log.Warn("wake-up subscription lost; the dispatcher polls until it is back", zap.Error(err))
		}
		lost = true
		if !errors.Is(err, errSubElsewhere) { // Redis answers the commands
			w.redis.failed(err)
		}
		ok := w.redis.waitRedis(ctx, bo.next())
		quiet = time.Now().Add(w.check)
		return ok
	}
	if startErr != nil && !failed(startErr) { // (Start logged it)
		return
	}
	confirmed = true
	for {
		var msg any
		var err error
		if fresh {
			fresh = false
			err = sub.Subscribe(ctx, w.channels()...)
		}
		if err == nil { // at least a moment: a timeout once the silence lasted check
			msg, err = sub.ReceiveTimeout(ctx, max(time.Until(quiet), time.Millisecond))
		}
		if ctx.Err() != nil {
			return
		}
		if m, ok := msg.(*redis.Message); ok && m.Channel == sentinelHello {
			w.heardHello(ctx, m.Payload, !helloed)
			helloed = true
			continue
		}
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() && heard && !pinged {
			// Silent for check: a message to itself tells a dead or
			// misplaced subscription from a quiet channel.
			pinged, quiet = true, time.Now().Add(w.check)
			if w.checkChannel() == "" {
				err = sub.Ping(ctx)
			} else {
				err = w.publishCheck(ctx) // the message comes on this subscription, if it is there
			}
			if err == nil {
				continue
			}
		}
		if err != nil {
			if !failed(err) {
				return
			}
			continue
		}
		heard, pinged, quiet = true, false, time.Now().Add(w.check)
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == w.checkChannel() {
				w.live.Store(true)
			}
			if m.Kind == "subscribe" {
				bo.reset()
				if lost {
					lost = false
					w.log.Info("wake-up subscription back")
					w.to.lookNow()
				}
			}
		case *redis.Message:
			if m.Channel != w.checkChannel() {
				w.wake(m.Payload)
			}
		}
	}
}

// checkChannel is the worker's check channel (store's CheckChannel), or
// "" once an ACL refused it (an ACL written for the wake channel alone):
// the check is then a PING, which tells a dead connection but not a
// misplaced one.
func (w *wakeListener) checkChannel() string {
	if w.noCheck.Load() {
		return ""
	}
	return w.checkName
}

// channels are the channels of the wake-up subscription.
func (w *wakeListener) channels() []string {
	out := w.eng.WakeChannels()
	if ch := w.checkChannel(); ch != "" {
		out = append(out, ch)
	}
	if ch := w.helloChannel(); ch != "" {
		out = append(out, ch)
	}
	return out
}

// publishCheck publishes the check message through the commands'
// connections: errSubElsewhere if it reached no subscriber.
func (w *wakeListener) publishCheck(ctx context.Context) error {
	n, err := w.eng.Redis().Publish(ctx, w.checkChannel(), "check").Result()
	if err == nil && n == 0 {
		err = errSubElsewhere
	}
	return err
}

// errSubElsewhere says the wake-up subscription is not on the server that
// the worker's commands reach: its check message reached no subscriber.
var errSubElsewhere = errors.New("overtake: the wake-up subscription is not on the server the commands reach " +
	"(an old primary after a failover?)")

// wake turns one wake-up message into a dispatcher signal.
func (w *wakeListener) wake(payload string) {
	if m, ok := w.eng.PausedFromMessage(payload); ok { // the paused levels changed
		w.to.setPaused(mirror.PauseModes(m))
		return
	}
	if id, ok := w.eng.CanceledFromMessage(payload); ok {
		w.to.cancelRequested(id)
		return
	}
	l, err := strconv.Atoi(payload)
	w.to.announced(l, err == nil)
	if w.onWake != nil {
		w.onWake() // tests only
	}
}
