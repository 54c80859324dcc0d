package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/preempt"
	"github.com/overtake/overtake/queue"
	otrt "github.com/overtake/overtake/runtime"
)

// The scenario of group spread: two runtimes of spreadSlots slots on one
// queue, spreadLow long low tasks that checkpoint every spreadCkptEvery
// steps of spreadStep (each at its own phase) and never save on their way
// out, then spreadNormal normal and spreadHigh high tasks of spreadUrgent
// each, one every spreadGap in an order drawn from the round's seed.
const (
	spreadRuntimes  = 2
	spreadSlots     = 4
	spreadLow       = 50
	spreadNormal    = 10
	spreadHigh      = 5
	spreadStep      = 10 * time.Millisecond
	spreadCkptEvery = 50 // steps: a checkpoint every 500 ms
	spreadUrgent    = 300 * time.Millisecond
	spreadGap       = 100 * time.Millisecond
)

// spreadResult is what one run of the scenario preempted and threw away.
type spreadResult struct {
	perTask map[string]int // preemptions of each low task preempted
	lost    time.Duration  // sum of the work lost at each preemption
	redone  int            // steps since the last checkpoint at each preemption
	// skipped counts the preemptions of a task while a low task that was
	// preempted fewer times ran on the same worker (here) or on the other
	// (there): each a preemption the rule of spreading did not prevent.
	skippedHere, skippedThere int
	wait                      latencies     // each urgent task's Enqueue call to its start
	stats                     otrt.RunStats // both runtimes' counters, added
}

func (r spreadResult) total() int {
	n := 0
	for _, k := range r.perTask {
		n += k
	}
	return n
}

func (r spreadResult) maxPer() int {
	m := 0
	for _, k := range r.perTask {
		m = max(m, k)
	}
	return m
}

// capped counts the tasks preempted preempt.DefaultMaxPreemptions times,
// which the default policy never preempts again.
func (r spreadResult) capped() int {
	n := 0
	for _, k := range r.perTask {
		if k >= preempt.DefaultMaxPreemptions {
			n++
		}
	}
	return n
}

func (r spreadResult) meanPer() float64 {
	if len(r.perTask) == 0 {
		return 0
	}
	return float64(r.total()) / float64(len(r.perTask))
}

// spreadRows runs the scenario o.rounds times, round r with the arrival
// order of seed r, and adds a row of every run's figures.
func (b *bench) spreadRows(ctx context.Context, t *table) {
	var runs []spreadResult
	for r := 1; r <= b.opts.rounds; r++ {
		progress("preemption spread round %d/%d", r, b.opts.rounds)
		res, err := b.spread(ctx, fmt.Sprintf("spread-%d", r), uint64(r))
		if err != nil {
			t.skip("11", "preemption spread", err)
			return
		}
		progress("  %d preemptions of %d tasks (%d at the cap), max %d, mean %.2f a task, work lost %v (%d steps); skipped a less preempted task %d times on its worker, %d on the other",
			res.total(), len(res.perTask), res.capped(), res.maxPer(), res.meanPer(), res.lost.Round(time.Millisecond), res.redone,
			res.skippedHere, res.skippedThere)
		progress("  urgent start: %s; fleet deferrals %d, overrides %d", res.wait.summary(),
			res.stats.FleetDeferrals, res.stats.FleetOverrides)
		runs = append(runs, res)
	}
	var total, maxes, means, capped, lost, redone, skipped, p50, worst, deferred []string
	for _, r := range runs {
		total = append(total, fmt.Sprint(r.total()))
		maxes = append(maxes, fmt.Sprint(r.maxPer()))
		means = append(means, num(r.meanPer()))
		capped = append(capped, fmt.Sprintf("%d of %d", r.capped(), len(r.perTask)))
		lost = append(lost, fmt.Sprint(r.lost.Milliseconds()))
		redone = append(redone, fmt.Sprint(r.redone))
		skipped = append(skipped, fmt.Sprintf("%d/%d", r.skippedHere, r.skippedThere))
		p50 = append(p50, ms(r.wait.pct(50)))
		worst = append(worst, ms(r.wait.pct(100)))
		deferred = append(deferred, fmt.Sprintf("%d/%d", r.stats.FleetDeferrals, r.stats.FleetOverrides))
	}
	scenario := fmt.Sprintf("%d runtimes × %d slots, %d low tasks (checkpoint every %v), %d normal + %d high of %v arriving every %v",
		spreadRuntimes, spreadSlots, spreadLow, spreadCkptEvery*spreadStep, spreadNormal, spreadHigh, spreadUrgent, spreadGap)
	t.add(row{id: "11", figure: "preemptions of one task, max (" + scenario + ")", value: strings.Join(maxes, ", "),
		unit: "preemptions", target: "—", note: "info: mean per preempted task " + strings.Join(means, ", ") +
			"; preemptions " + strings.Join(total, ", ") + "; tasks preempted MaxPreemptions (3) times " + strings.Join(capped, ", ") +
			"; low tasks running that were preempted fewer times than a victim, summed over the preemptions, on its worker/on the other " +
			strings.Join(skipped, ", ")})
	t.add(row{id: "11", figure: "work thrown away, sum of the work lost at each preemption", value: strings.Join(lost, ", "),
		unit: "ms", target: "—", note: "info: steps redone " + strings.Join(redone, ", ") + fmt.Sprintf(" (of %v each)", spreadStep)})
	t.add(row{id: "11", figure: "urgent start, Enqueue call → handler start, p50", value: strings.Join(p50, ", "),
		unit: "ms", target: "—", note: "info: the slowest of each run " + strings.Join(worst, ", ") +
			"; reservations refused by the fleet/reserved regardless after FleetDeferral " + strings.Join(deferred, ", ")})
}

// spreadRun is the state one run's handlers share.
type spreadRun struct {
	started chan struct{} // a low task's run began
	urgent  chan struct{} // an urgent task returned
	mu      sync.Mutex
	running map[string]int       // the worker of each low task running
	sent    map[string]time.Time // when each urgent task's Enqueue was called
	res     spreadResult
}

// preempted records the preemption of task id on worker w, which lost
// lost and redone steps.
func (s *spreadRun) preempted(id string, w int, lost time.Duration, redone int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for other, ow := range s.running {
		if other == id || s.res.perTask[other] >= s.res.perTask[id] {
			continue
		}
		if ow == w {
			s.res.skippedHere++
		} else {
			s.res.skippedThere++
		}
	}
	s.res.perTask[id]++
	s.res.lost += lost
	s.res.redone += redone
}

// low runs a long task: a step every spreadStep, a checkpoint every
// spreadCkptEvery steps at the phase its payload gives. Preempted, it
// records the work since its last checkpoint of this run (or its start)
// and returns without saving: that work is thrown away.
func (s *spreadRun) low(ctx context.Context, w int, info *queue.TaskInfo) error {
	start := time.Now()
	step, _, err := checkpoint.Load[int](ctx)
	if err != nil {
		return err
	}
	saved, savedAt := step, start
	phase := 0
	if len(info.Payload) > 0 {
		phase = int(info.Payload[0])
	}
	s.mu.Lock()
	s.running[info.ID] = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, info.ID)
		s.mu.Unlock()
	}()
	select {
	case s.started <- struct{}{}:
	default:
	}
	tick := time.NewTicker(spreadStep)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), handlers.ErrPreempted) {
				s.preempted(info.ID, w, time.Since(savedAt), step-saved)
			}
			return context.Cause(ctx)
		case <-tick.C:
		}
		step++
		if (step+phase)%spreadCkptEvery == 0 {
			if err := checkpoint.Save(ctx, step); err != nil {
				return errors.Join(context.Cause(ctx), err)
			}
			saved, savedAt = step, time.Now()
		}
	}
}

// urgentTask records its wait, runs for spreadUrgent, then signals that
// it returned.
func (s *spreadRun) urgentTask(ctx context.Context, info *queue.TaskInfo) error {
	defer func() { s.urgent <- struct{}{} }()
	s.mu.Lock()
	s.res.wait = append(s.res.wait, time.Since(s.sent[info.ID]))
	s.mu.Unlock()
	return sleep(ctx, spreadUrgent)
}

// spread runs the scenario once on queue name: it saturates both
// runtimes with low tasks, lets each checkpoint once, enqueues the urgent
// tasks while saturated, and stops both once every urgent task returned.
func (b *bench) spread(ctx context.Context, name string, seed uint64) (spreadResult, error) {
	s := &spreadRun{started: make(chan struct{}, spreadLow), urgent: make(chan struct{}, spreadNormal+spreadHigh),
		running: map[string]int{}, sent: map[string]time.Time{}, res: spreadResult{perTask: map[string]int{}}}
	p, err := b.pair(name)
	if err != nil {
		return s.res, err
	}
	defer p.close()
	for i := range spreadLow {
		phase := byte(i * 7 % spreadCkptEvery)
		if _, err := p.prod.Enqueue(ctx, queue.NewTask("low", []byte{phase}), queue.Level(0)); err != nil {
			return s.res, err
		}
	}
	var rts []*otrt.Runtime
	defer func() {
		for _, rt := range rts {
			shutdown(rt)
		}
	}()
	for i := range spreadRuntimes {
		mux := handlers.NewMux()
		mux.HandleFunc("low", func(ctx context.Context, info *queue.TaskInfo) error { return s.low(ctx, i, info) })
		mux.HandleFunc("urgent", s.urgentTask)
		rt, err := otrt.New(p.rt, mux, otrt.Config{Concurrency: spreadSlots, Logger: zap.NewNop(),
			WorkerID: fmt.Sprintf("%s-%d", name, i)})
		if err != nil {
			return s.res, err
		}
		if err := rt.Start(ctx); err != nil {
			return s.res, err
		}
		rts = append(rts, rt)
	}
	if err := receive(s.started, spreadRuntimes*spreadSlots, "low task start"); err != nil {
		return s.res, err
	}
	if err := sleep(ctx, spreadCkptEvery*spreadStep); err != nil { // every low task checkpointed once
		return s.res, err
	}
	levels := slices.Repeat([]int{1}, spreadNormal)
	levels = append(levels, slices.Repeat([]int{2}, spreadHigh)...)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	rng.Shuffle(len(levels), func(i, j int) { levels[i], levels[j] = levels[j], levels[i] })
	for i, l := range levels {
		id := fmt.Sprintf("urgent-%02d", i)
		s.mu.Lock()
		s.sent[id] = time.Now()
		s.mu.Unlock()
		if _, err := p.prod.Enqueue(ctx, queue.NewTask("urgent", nil), queue.Level(l), queue.ID(id)); err != nil {
			return s.res, err
		}
		if err := sleep(ctx, spreadGap); err != nil {
			return s.res, err
		}
	}
	if err := receive(s.urgent, len(levels), "urgent task return"); err != nil {
		return s.res, err
	}
	for _, rt := range rts {
		st := rt.Stats()
		s.res.stats.Preempted += st.Preempted
		s.res.stats.Reserved += st.Reserved
		s.res.stats.FleetDeferrals += st.FleetDeferrals
		s.res.stats.FleetOverrides += st.FleetOverrides
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := int64(s.res.total()); got != s.res.stats.Preempted {
		return s.res, fmt.Errorf("handlers saw %d preemptions, runtimes counted %d", got, s.res.stats.Preempted)
	}
	return s.res, nil
}
