package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/mirror"
	"github.com/overtake/overtake/internal/store"
	"github.com/overtake/overtake/queue"
)

// Periodic is a task the runtime enqueues on a schedule (Config.Periodic).
// Every runtime given the same schedule tries each of its ticks, and the
// queue enqueues each tick once across the fleet: the enqueue script
// compares the tick with the schedule's last, the key periodic:<Name>, and
// sets it in the same call. So a tick is enqueued while at least one
// runtime with the schedule runs, whichever of them are killed or
// restarted, and never twice. Ticks missed while no runtime ran (or while
// Redis could not be reached until the next tick was due) are skipped, as
// asynq's scheduler skips them: a runtime starts with the first tick
// after it started. A runtime that wakes late (a paused process) enqueues
// the ticks it missed, oldest first, up to 16.
type Periodic struct {
	// Name identifies the schedule in the queue: runtimes with schedules
	// of the same Name share their ticks. Required, unique within
	// Config.Periodic.
	Name string
	// Spec says when, as github.com/robfig/cron/v3 parses it: a cron
	// expression of 5 fields (minute, hour, day of month, month, day of
	// week) or 6 (seconds first), a descriptor (@hourly, @daily, ...) or
	// "@every <duration>" (whole seconds, at least 1 s, else New refuses
	// it; its ticks are the multiples of the duration, so every runtime
	// agrees on them). Times
	// are in UTC unless the spec starts with CRON_TZ=<zone>. Required.
	Spec string
	// Task is enqueued at each tick with its options (level, class,
	// Unique, MaxRetries, ...); its ID is "<Name>@<tick, RFC 3339 in
	// UTC>". Required. New refuses a Task the queue would refuse
	// (queue.Client.Check): a level, level name or class it does not
	// have, an oversized payload.
	Task *queue.Task
}

// schedule is a Periodic with its parsed spec.
type schedule struct {
	Periodic
	next func(time.Time) time.Time // the first tick after t
	// otherSpec is the other spec last logged as found in the schedule's
	// key, refused whether a shape mismatch was logged: each is logged
	// once. skipped counts the ticks skipped while Redis could not be
	// reached, said at warn for the first of an outage only. Only the
	// schedule's goroutine uses them.
	otherSpec string
	refused   bool
	skipped   int
}

// maxCatchUp bounds the missed ticks a late runtime enqueues at once.
const maxCatchUp = 16

// cronParser reads Periodic.Spec: 5 or 6 fields, and descriptors.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseSchedules parses every Periodic, and refuses a missing or repeated
// name, a missing task and a spec cron cannot read.
func parseSchedules(ps []Periodic) ([]*schedule, error) {
	out := make([]*schedule, 0, len(ps))
	seen := map[string]bool{}
	for i, p := range ps {
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("periodic schedule %d: no Name", i)
		case seen[p.Name]:
			return nil, fmt.Errorf("periodic schedule %d: Name %q repeated", i, p.Name)
		case p.Task == nil || p.Task.Type() == "":
			return nil, fmt.Errorf("periodic schedule %q: no Task, or a Task without a type", p.Name)
		}
		seen[p.Name] = true
		spec := strings.TrimSpace(p.Spec)
		if spec != "" && !strings.HasPrefix(spec, "TZ=") && !strings.HasPrefix(spec, "CRON_TZ=") {
			spec = "CRON_TZ=UTC " + spec
		}
		sch, err := cronParser.Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("periodic schedule %q: Spec %q: %w", p.Name, p.Spec, err)
		}
		s := &schedule{Periodic: p, next: sch.Next}
		if d, ok := sch.(cron.ConstantDelaySchedule); ok {
			every := d.Delay // whole seconds, at least one (cron.Every)
			if asked := everyOf(spec); asked != every {
				// cron rounds it silently: "@every 500ms" would run every 1 s.
				return nil, fmt.Errorf("periodic schedule %q: Spec %q: @every takes whole seconds, at least 1s; "+
					"%v would run every %v", p.Name, p.Spec, asked, every)
			}
			s.next = func(t time.Time) time.Time { return t.Truncate(every).Add(every) }
		}
		out = append(out, s)
	}
	return out, nil
}

// everyOf returns the duration an "@every <duration>" spec asks for, 0 if
// it cannot be read (cron has read it already).
func everyOf(spec string) time.Duration {
	_, after, ok := strings.Cut(spec, "@every ")
	if !ok {
		return 0
	}
	d, _ := time.ParseDuration(strings.TrimSpace(after))
	return d
}

// scheduler enqueues the ticks of Config.Periodic's schedules, one
// goroutine per schedule, until leasing stops (halt) or the runtime
// stops. Whether a tick was enqueued by another runtime is Redis's to
// say (the enqueue script); while Redis is unreachable, a tick waits for
// the dispatcher's probe (redisWatch) until the next is due.
type scheduler struct {
	loops      startStop
	q          *queue.Client
	eng        *store.Store
	log        *zap.Logger
	maxBackoff time.Duration
	redis      *redisWatch
	halt       <-chan struct{} // closed when leasing stops
	schedules  []*schedule
}

// start runs each schedule until stop.
func (sc *scheduler) start(ctx context.Context) {
	loops := make([]func(context.Context), len(sc.schedules))
	for i, s := range sc.schedules {
		loops[i] = func(ctx context.Context) { sc.run(ctx, s) }
	}
	sc.loops.start(ctx, loops...)
}

// stop ends the schedules.
func (sc *scheduler) stop() { sc.loops.stop() }

// run enqueues s's ticks until leasing stops.
func (sc *scheduler) run(ctx context.Context, s *schedule) {
	next := s.next(time.Now())
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sc.halt:
			return
		case <-timer.C:
		}
		due := []time.Time{next}
		for now, t := time.Now(), s.next(next); !t.After(now); t = s.next(t) {
			due = append(due, t)
		}
		if len(due) > maxCatchUp {
			sc.log.Warn("periodic ticks skipped: the runtime woke late", zap.String("schedule", s.Name),
				zap.Int("skipped", len(due)-maxCatchUp), zap.Time("first", due[0]))
			due = due[len(due)-maxCatchUp:]
		}
		for _, tick := range due {
			if ctx.Err() != nil {
				return
			}
			sc.enqueueTick(ctx, s, tick)
		}
		next = s.next(due[len(due)-1])
		timer.Reset(time.Until(next))
	}
}

// enqueueTick enqueues s's task for tick, unless another runtime did. An
// attempt that fails for want of Redis is retried with backoff until the
// next tick is due; then the tick is skipped.
func (sc *scheduler) enqueueTick(ctx context.Context, s *schedule, tick time.Time) {
	log := sc.log.With(zap.String("schedule", s.Name), zap.Time("tick", tick))
	if !sc.redis.down() { // else no read: the probe is the one attempt
		sc.checkSpec(ctx, s, log)
	}
	until := s.next(tick)
	b := backoff{limit: sc.maxBackoff}
	tried := false // a failure was logged at warn
	for {
		// While an outage lasts, wait for the dispatcher's probe to find
		// Redis, or for the next tick, before a try: the probe is the
		// worker's one connection attempt per backoff.
		if ended := sc.redis.endedCh(); sc.redis.down() {
			select {
			case <-ctx.Done():
				return
			case <-ended:
			case <-time.After(time.Until(until)):
				lvl := zap.WarnLevel
				if s.skipped > 0 {
					lvl = zap.DebugLevel
				}
				s.skipped++
				log.Log(lvl, "periodic tick skipped: redis unreachable until the next was due")
				return
			}
		}
		ectx, cancel := context.WithTimeout(ctx, sc.q.Config().LeaseDuration)
		sent := time.Now()
		info, err := sc.q.Enqueue(ectx, s.Task, mirror.Option(store.Tick(s.Name, s.Spec, tick)))
		cancel()
		switch {
		case err == nil:
			sc.redis.answered()
			if s.skipped > 0 {
				log.Info("periodic ticks resumed", zap.Int("skipped", s.skipped))
			}
			s.refused, s.skipped = false, 0
			log.Info("periodic task enqueued", zap.String("task_id", info.ID))
			return
		case errors.Is(err, queue.ErrShapeMismatch):
			// Not transient: the config or the stored shape must change.
			// Logged once (the lease loop says so too), each tick after
			// at debug.
			if !s.refused {
				s.refused = true
				log.Error("periodic tasks not enqueued: this worker's config differs from the queue's shape", zap.Error(err))
			} else {
				log.Debug("periodic task not enqueued: shape mismatch", zap.Error(err))
			}
			return
		case errors.Is(err, store.ErrTickTaken):
			log.Debug("periodic tick enqueued by another runtime")
			return
		case errors.Is(err, queue.ErrDuplicateTask):
			log.Info("periodic task refused: an equal task holds its uniqueness lock, or its ID exists", zap.Error(err))
			return
		case errors.Is(err, queue.ErrInvalidTask), errors.Is(err, queue.ErrInvalidLevel),
			errors.Is(err, queue.ErrPayloadTooLarge), errors.Is(err, queue.ErrCorrupt), errors.Is(err, queue.ErrSchema):
			log.Error("periodic task not enqueued", zap.Error(err))
			return
		}
		sc.redis.called(err, sent) // an outage begins, or a stale failure
		wait := b.next()
		if ctx.Err() != nil || !time.Now().Add(wait).Before(until) {
			log.Warn("periodic tick skipped: not enqueued before the next was due", zap.Error(err))
			return
		}
		lvl := zap.WarnLevel // once a tick
		if tried {
			lvl = zap.DebugLevel
		}
		tried = true
		log.Log(lvl, "periodic task not enqueued; retrying", zap.Error(err), zap.Duration("wait", wait))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// checkSpec reads the spec the schedule's key holds, that of the runtime
// that decided the last tick, and logs once at warn when it is another
// than s's: runtimes that share a Name but not a Spec each enqueue their
// own ticks (each tick once, none older than the last), so the queue gets
// the union of both schedules until they agree, most often for the length
// of a rolling deploy. The key holds the newest writer's spec; no runtime
// follows another's. A failed read is left to the enqueue that follows.
func (sc *scheduler) checkSpec(ctx context.Context, s *schedule, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(ctx, sc.q.Config().LeaseDuration)
	defer cancel()
	_, spec, err := sc.eng.LastTick(ctx, s.Name)
	if err != nil || spec == "" || spec == s.Spec || spec == s.otherSpec {
		return
	}
	s.otherSpec = spec
	log.Warn("periodic schedule: another runtime decided the last tick with another spec; each runtime "+
		"enqueues the ticks of its own", zap.String("spec", s.Spec), zap.String("stored_spec", spec))
}
