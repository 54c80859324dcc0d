package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/victim"
	"github.com/overtake/overtake/queue"
)

// Runtime runs the tasks of one queue with a pool of workers, preempting
// running low-priority tasks when urgent ones arrive and no worker is free.
type Runtime struct {
	q   *queue.Client
	eng *store.Store // q's runtime side: lease, heartbeat, ack, ...
	h   handlers.Handler
	cfg Config
	log *zap.Logger
	obs *observer

	workers workers // the handlers' ants pool (workers.go)
	slots   *slots  // the runs held and the slots they take (slots.go)
	redis   *redisWatch

	// The services (services.go).
	dispatch  *dispatcher    // leases into free slots (dispatcher.go)
	done      *completer     // the runs' outcomes (settle.go, ack.go)
	preemptor *preemptor     // chooses victims and reserves urgent work (victim.go)
	beats     *heartbeater   // heartbeat.go
	wakes     *wakeListener  // the wake-up subscription (wake.go)
	sched     *scheduler     // Config.Periodic (periodic.go)
	scaler    *autoscaler    // the pools' sizes (pool_autoscale.go)
	outcomes  *outcomeCounts // for the fleet's rates (rates.go)

	life *lifecycle // Start to Shutdown (lifecycle.go)
}

// RunStats are cumulative counts of one runtime since it started.
type RunStats struct {
	// Processed counts runs that ended in success or failure, as the
	// overtake.task.processed metric and the fleet's processed rate
	// (queue.Rates): requeued runs (preempted, yielded, shut down) are not.
	Processed int64
	// Failed counts the processed runs that failed: retried, or
	// dead-lettered (retries exhausted, SkipRetry, no handler, a
	// malformed payload), as overtake.task.failed and the failed rate.
	Failed int64
	// Dead counts tasks dead-lettered by this runtime, records that could
	// not be decoded and tasks its lease calls set aside (no run)
	// included.
	Dead       int64
	Preempted  int64 // victims this runtime cancelled for urgent work
	Reserved   int64 // urgent tasks this runtime leased in order to preempt
	Stuck      int64 // runs that ignored their preemption or cancel past the grace period
	ScaledUp   int64 // times the autoscaler raised the concurrency
	ScaledDown int64 // times the autoscaler lowered the concurrency
	// SLABreaches counts tasks leased after waiting longer than their
	// level's SLA (Config.SLA).
	SLABreaches int64
	// FleetDeferrals counts reservations the fleet refused because another
	// live worker looked able to take the urgent task (a free slot, or a
	// lower or less preempted eligible victim); this runtime then deferred
	// to it.
	FleetDeferrals int64
	// FleetOverrides counts urgent tasks this runtime reserved regardless
	// of the fleet, after deferring to it for Preemption.FleetDeferral (a
	// killed, draining or non-preempting worker did not take them).
	FleetOverrides int64
	// UnsavedPreemptions counts preempted runs that returned with no
	// checkpoint saved during the run (checkpoint.Save never succeeded):
	// each next run starts over, from an earlier run's checkpoint if any.
	// Each is also counted by overtake.checkpoint.missed and warned of,
	// at most once a minute per task type.
	UnsavedPreemptions int64
	Canceled           int64 // runs that ended canceled (queue.Client.Cancel): not Processed, not Failed
}

// shapeTimeout bounds the shape check of New.
const shapeTimeout = 5 * time.Second

// New returns a runtime that takes tasks from q and runs them with h.
//
// Like queue.New, New checks q's Levels, LevelNames and Classes against
// the shape the queue holds in Redis, unless q passed that check already,
// and fails with an error wrapping queue.ErrShapeMismatch (naming both,
// and the fix) when they differ: a worker that disagrees on the levels
// would lease in the wrong order or not at all. When Redis cannot be
// reached within 5 s, Start's first heartbeat checks it instead, and Start
// fails with that error; when that heartbeat could not reach Redis either
// (Config.StartTimeout negative), the first lease does, and the runtime
// stops leasing and shuts down, and Run returns the error.
func New(q *queue.Client, h handlers.Handler, cfg Config) (*Runtime, error) {
	if q == nil || h == nil {
		return nil, fmt.Errorf("%w: nil queue client or handler", ErrInvalidConfig)
	}
	cfg = cfg.withDefaults(q)
	if err := cfg.validate(q); err != nil {
		return nil, err
	}
	eng := store.Of(q)
	if !eng.ShapeChecked() { // else queue.New (or a call of q) checked it
		ctx, cancel := context.WithTimeout(context.Background(), shapeTimeout)
		defer cancel()
		if err := eng.CheckShape(ctx); store.ShapeRefused(err) {
			return nil, err
		}
	}
	r := &Runtime{
		q: q, eng: eng, h: handlers.Recover()(h), cfg: cfg,
		log:  cfg.Logger.With(zap.String("queue", q.Name()), zap.String("worker", cfg.WorkerID)),
		life: newLifecycle(),
	}
	r.slots = newSlots(cfg, q.Levels(), r.log)
	r.dispatch = newDispatcher(&dispatcher{cfg: cfg, eng: eng, q: q, log: r.log, slots: r.slots, workers: &r.workers,
		runs: r, halt: r.halt})
	d := r.dispatch
	r.redis = &redisWatch{log: r.log, onDown: d.signal, onBack: func() {
		d.lookNow()
		go r.wakes.checkSubscription(r.life.base) // the commands may reach another server now
	}}
	d.redis = r.redis
	r.wakes = &wakeListener{eng: eng, log: r.log, redis: r.redis, to: wakeTo{d, r}, maxBackoff: cfg.MaxRedisBackoff,
		check: cfg.wakeCheckInterval(), checkName: eng.CheckChannel(cfg.WorkerID)}
	r.outcomes = newOutcomeCounts(r.slots.pools, r.slots.poolOf)
	d.outcomes = r.outcomes
	r.preemptor = &preemptor{eng: eng, q: q, log: r.log, worker: cfg.WorkerID,
		policy: victim.Policy{Policy: cfg.Preemption}, poolOf: r.slots.poolOf, slots: r}
	for _, p := range r.slots.pools {
		r.preemptor.bands = append(r.preemptor.bands, p.levels)
	}
	d.preemptor = r.preemptor
	r.done = &completer{eng: eng, q: q, log: r.log, maxBackoff: cfg.MaxRedisBackoff, redis: r.redis,
		outcomes: r.outcomes, slots: d, dispatched: d.stopped}
	d.done = r.done
	r.beats = &heartbeater{eng: eng, worker: cfg.WorkerID, interval: cfg.HeartbeatInterval, log: r.log,
		held: heldSlots{r.slots, d, r}, counts: r.outcomes, redis: r.redis}
	schedules, _ := parseSchedules(cfg.Periodic) // validated above
	r.sched = &scheduler{q: q, eng: eng, log: r.log, maxBackoff: cfg.MaxRedisBackoff, redis: r.redis,
		halt: d.leasingStopped(), schedules: schedules}
	r.scaler = newAutoscaler(r.slots.pools, &autoscaler{depths: q.Depths, log: r.log, redis: r.redis, halt: d.leasingStopped(),
		slots: d, report: r.beats.beat})
	var err error
	if r.obs, err = newObserver(r); err != nil {
		return nil, err
	}
	r.done.obs = r.obs
	return r, nil
}

// WorkerID returns this worker's ID in the fleet.
func (r *Runtime) WorkerID() string { return r.cfg.WorkerID }

// Stats returns the runtime's cumulative counts.
func (r *Runtime) Stats() RunStats {
	p := &r.preemptor.counted
	return RunStats{Processed: r.done.processed.Load(), Failed: r.done.failed.Load(), Dead: r.done.dead.Load(),
		Preempted: p.preempted.Load(), Reserved: p.reserved.Load(), Stuck: p.stuck.Load(),
		ScaledUp: r.scaler.scaledUp.Load(), ScaledDown: r.scaler.scaledDown.Load(), SLABreaches: r.obs.slaBreaches.Load(),
		FleetDeferrals: p.deferred.Load(), FleetOverrides: p.overrides.Load(),
		UnsavedPreemptions: r.done.unsaved.Load(), Canceled: r.done.canceled.Load()}
}

// Start registers the worker and starts leasing. It returns once Redis
// answered the worker's first heartbeat, at once when Redis is up; while
// Redis cannot be reached it waits, trying again, for at most
// Config.StartTimeout, then fails with an error wrapping
// ErrRedisUnreachable that names the address, as it does when ctx ends
// first. With StartTimeout negative it returns at once and the worker
// waits for Redis in the background.
func (r *Runtime) Start(ctx context.Context) error {
	if !r.life.begin(ctx) {
		return errors.New("overtake: runtime already started")
	}
	base := r.life.base
	r.redis.ctx = base
	if err := r.awaitRedis(ctx); err != nil {
		r.life.abort()
		return err
	}
	// The pool (and its goroutines) exists only between Start and Shutdown,
	// so a runtime that is never started holds nothing. It holds
	// Concurrency (or Autoscale.Max) workers plus room for victims winding
	// down (StartImmediately) and for handlers stuck past their grace; see
	// poolSize.
	err := r.workers.start(r.cfg.poolSize(), r.cfg.earlyMax(), r.cfg.Logger)
	if err != nil {
		r.life.abort()
		return err
	}
	if err := r.obs.register(); err != nil {
		r.workers.release()
		r.life.abort()
		return err
	}
	if r.life.unregisterCc, err = r.obs.metrics.RegisterConcurrency(r.slots.capacity.Load, r.q.Name()); err != nil {
		r.obs.close()
		r.workers.release()
		r.life.abort()
		return err
	}
	r.done.start(base)
	r.wakes.start(ctx, base)
	r.beats.start(base)
	r.dispatch.start(base)
	fields := []zap.Field{zap.Int("concurrency", r.Concurrency())}
	if a := r.cfg.Autoscale; a != nil {
		fields = append(fields, zap.Int("autoscale_min", a.Min), zap.Int("autoscale_max", a.Max),
			zap.Duration("autoscale_interval", a.Interval))
	}
	r.scaler.start(base)
	r.sched.start(base)
	r.log.Info("runtime started", fields...)
	return nil
}

// Run starts the runtime and blocks until ctx ends, then shuts down within
// Config.ShutdownTimeout. It returns Start's error when the runtime could
// not start: Redis did not answer within Config.StartTimeout, or ctx
// ended before it did (ErrRedisUnreachable), or the queue's shape is not
// this worker's (queue.ErrShapeMismatch). When the runtime stopped on its
// own (a shape mismatch found by a lease, see New), Run returns that
// error, joined with the shutdown's if any.
func (r *Runtime) Run(ctx context.Context) error {
	if err := r.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-r.life.halted:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.ShutdownTimeout)
	defer cancel()
	err := r.Shutdown(sctx)
	if halted, herr := r.life.haltedWith(); halted {
		return errors.Join(herr, err)
	}
	return err
}

// halt stops the runtime on its own, for err that it must not run past:
// Shutdown within Config.ShutdownTimeout, in the background (the caller
// may be the dispatcher, which Shutdown waits for); Run returns err.
func (r *Runtime) halt(err error) {
	if !r.life.halt(err) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.life.base), r.cfg.ShutdownTimeout)
		defer cancel()
		_ = r.Shutdown(ctx) // its result is Shutdown's and Run's
	}()
}

// heldSlots is the heartbeater's leaseHolder: the slots, and the
// dispatcher for the paused levels a heartbeat reads.
// A cancel the heartbeat's reply names goes to the runs (cancel.go).
type heldSlots struct {
	*slots
	d    *dispatcher
	runs runCanceler
}

// setPaused applies the paused levels a heartbeat read.
func (h heldSlots) setPaused(m map[int]queue.PauseMode) { h.d.setPaused(m) }

// cancelRequested cancels the run of task id (Runtime.cancelRequested).
func (h heldSlots) cancelRequested(id string) { h.runs.cancelRequested(id) }

// wakeTo is the wake listener's waker: the dispatcher, and the runs for
// a cancel's message.
type wakeTo struct {
	*dispatcher
	runCanceler
}
