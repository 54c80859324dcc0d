package runtime

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

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
func (r *Runtime) listen(sub *redis.PubSub, startErr error) {
	defer r.loops.Done()
	ctx := r.baseCtx
	// A receive blocks until a message or its timeout, whatever ctx: the
	// subscription is closed as the runtime stops, which ends it.
	cur := &r.sub
	cur.Store(sub)
	stop := context.AfterFunc(ctx, func() { _ = cur.Load().Close() })
	defer stop()
	defer func() { _ = cur.Load().Close() }()
	bo := backoff{limit: r.cfg.MaxRedisBackoff}
	check := r.cfg.wakeCheckInterval()
	confirmed := startErr == nil // a subscription was confirmed once
	lost := false                // none was since the last failure
	heard := confirmed           // a message came since the last failure
	pinged := false              // a check went out since the last message
	fresh := false               // sub is new: it subscribes on its next attempt
	// failed replaces the subscription after err and waits before the
	// next attempt; false if the runtime stopped meanwhile. go-redis would
	// keep a connection whose read timed out (no PONG, or no answer on a
	// new connection) or on which Redis refused the SUBSCRIBE (NOPERM),
	// and not subscribe on it again.
	failed := func(err error) bool {
		if r.subElsewhere.Swap(false) { // checkSubscription closed it
			err = errSubElsewhere
		}
		if ch := r.checkChannel(); ch != "" && redis.HasErrorPrefix(err, "NOPERM") {
			r.log.Warn("the ACL refuses the subscription check channel; checking with PINGs, which miss a "+
				"subscription left on an old primary: allow "+ch+" (see docs/operations.md)", zap.Error(err))
			r.noCheck.Store(true)
			bo.reset()
		}
		old := sub
		sub, fresh = r.eng.Redis().Subscribe(ctx), true
		cur.Store(sub)
		_ = old.Close()
		heard, pinged = false, false
		if !lost && confirmed {
			r.log.Warn("wake-up subscription lost; the dispatcher polls until it is back", zap.Error(err))
		}
		lost = true
		if !errors.Is(err, errSubElsewhere) { // Redis answers the commands
			r.redis.failed(err)
		}
		return r.redis.waitRedis(r.baseCtx, bo.next())
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
			err = sub.Subscribe(ctx, r.subChannels()...)
		}
		if err == nil {
			msg, err = sub.ReceiveTimeout(ctx, check)
		}
		if ctx.Err() != nil {
			return
		}
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() && heard && !pinged {
			// Silent for check: a message to itself tells a dead or
			// misplaced subscription from a quiet channel.
			pinged = true
			if r.checkChannel() == "" {
				err = sub.Ping(ctx)
			} else {
				err = r.publishCheck(ctx) // the message comes on this subscription, if it is there
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
		heard, pinged = true, false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				bo.reset()
				if lost {
					lost = false
					r.log.Info("wake-up subscription back")
					r.lookNow()
				}
			}
		case *redis.Message:
			if m.Channel != r.checkChannel() {
				r.wake(m.Payload)
			}
		}
	}
}

// checkSubscription checks the wake-up subscription at once, as its
// listener does after a silence: when an outage ends, the commands may
// reach another server than before (a failover) while the subscription,
// which saw no failure, stays on the old one. If the check message reaches
// no one, the subscription is closed and its listener subscribes again.
func (r *Runtime) checkSubscription() {
	sub := r.sub.Load()
	if sub == nil || r.checkChannel() == "" || r.baseCtx.Err() != nil {
		return // the listener did not start, or the ACL refuses the channel
	}
	ctx, cancel := context.WithTimeout(r.baseCtx, 5*time.Second)
	defer cancel()
	if errors.Is(r.publishCheck(ctx), errSubElsewhere) {
		r.subElsewhere.Store(true)
		_ = sub.Close()
	}
}

// checkChannel is the worker's check channel (store's CheckChannel), or
// "" once an ACL refused it (an ACL written for the wake channel alone):
// the check is then a PING, which tells a dead connection but not a
// misplaced one.
func (r *Runtime) checkChannel() string {
	if r.noCheck.Load() {
		return ""
	}
	return r.checkName
}

// subChannels are the channels of the wake-up subscription.
func (r *Runtime) subChannels() []string {
	if ch := r.checkChannel(); ch != "" {
		return []string{r.eng.WakeChannel(), ch}
	}
	return []string{r.eng.WakeChannel()}
}

// publishCheck publishes the check message through the commands'
// connections: errSubElsewhere if it reached no subscriber.
func (r *Runtime) publishCheck(ctx context.Context) error {
	n, err := r.eng.Redis().Publish(ctx, r.checkChannel(), "check").Result()
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
func (r *Runtime) wake(payload string) {
	if m, ok := r.eng.PausedFromMessage(payload); ok { // the paused levels changed
		r.setPaused(m)
		return
	}
	if l, err := strconv.Atoi(payload); err == nil && !r.isPaused(l) {
		r.raiseWake(int64(l))
	}
	r.signal()
	if r.onWake != nil {
		r.onWake() // tests only
	}
}
