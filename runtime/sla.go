package runtime

import (
	"github.com/overtake/overtake/internal/store"

	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/internal/telemetry"
)

// validateSLA checks Config.SLA against the queue's levels: every key is a
// level 0..levels-1 and every bound is positive.
func validateSLA(sla map[int]time.Duration, levels int) error {
	for _, l := range slices.Sorted(maps.Keys(sla)) {
		if l < 0 || l >= levels {
			return fmt.Errorf("SLA for level %d, but the queue's levels are 0..%d", l, levels-1)
		}
		if d := sla[l]; d <= 0 {
			return fmt.Errorf("SLA of level %d is %v; it must be positive", l, d)
		}
	}
	return nil
}

// checkSLA records a breach when rn's task waited longer than the SLA of
// the level it was enqueued at (Task.OriginalLevel): that is the level the
// producer asked for, and the wait (since ReadyAt) includes the time before
// the task aged up, so the SLA of the level it reached would not be fair.
// Called once per run, when it is leased, with the run's span started.
func (o *observer) checkSLA(ctx context.Context, rn *run, wait time.Duration) {
	t := rn.t
	sla, ok := o.r.cfg.SLA[t.OriginalLevel]
	if !ok || wait <= sla {
		return
	}
	o.slaBreaches.Add(1)
	o.r.outcomes.count(t.OriginalLevel, func(c *store.LevelCounts) { c.SLABreaches++ })
	o.metrics.RecordSLABreach(ctx, telemetry.Labels{Queue: o.r.q.Name(), Level: t.OriginalLevel,
		LevelName: o.r.q.LevelName(t.OriginalLevel)})
	if rn.span != nil {
		telemetry.AddSLABreached(rn.span, t.OriginalLevel, wait, sla)
	}
	rn.log.Warn("task waited longer than its level's SLA", zap.Duration("wait", wait), zap.Duration("sla", sla),
		zap.Int("sla_level", t.OriginalLevel))
}
