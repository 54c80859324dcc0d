package store

import (
	"strconv"
	"strings"
	"time"
)

// Processing rates. Each worker counts its outcomes per level and adds
// them to the fleet's counters in its heartbeat, so rates cost no command
// per task: one HINCRBY per non-zero counter and an EXPIRE per heartbeat
// of a busy worker, nothing for an idle one. The counters live in one hash
// per 10-second bucket of Redis's clock (r:<bucket>, fields <level><kind>),
// which expires after rateKeep. Stats sums the last complete buckets, so
// any client reads fleet-wide rates without an OpenTelemetry backend;
// counts reach them at the worker's next heartbeat (HeartbeatInterval,
// 10 s by default). lua/buckets.lua holds the same values for the scripts
// (TestLuaConstants).
const (
	// rateBucket is the width of one counter bucket.
	rateBucket = 10 * time.Second
	// rateBuckets is how many complete buckets Stats sums.
	rateBuckets = 6
	// rateKeep is how long a bucket outlives its end.
	rateKeep = (rateBuckets + 7) * rateBucket
)

// RateWindow is the span over which Stats computes rates: the last six
// complete 10-second buckets of Redis's clock.
const RateWindow = rateBuckets * rateBucket

// Rates are fleet-wide outcomes per second at one level over RateWindow.
type Rates struct {
	Processed   float64
	Failed      float64
	Preempted   float64
	SLABreaches float64
}

// encodeCounts returns the non-zero counts for add_counts (lua/counts.lua),
// by level ("<level>") and by pool ("P<name>", names that are not
// ValidPoolName left out): processed, failed, preempted and SLA breaches,
// in that order; nil when none.
func encodeCounts(m map[int]LevelCounts, pools map[string]LevelCounts) map[string][4]int64 {
	var out map[string][4]int64
	put := func(key string, c LevelCounts) {
		if out == nil {
			out = map[string][4]int64{}
		}
		out[key] = [4]int64{max(c.Processed, 0), max(c.Failed, 0), max(c.Preempted, 0), max(c.SLABreaches, 0)}
	}
	for l, c := range m {
		if !c.IsZero() && l >= 0 {
			put(strconv.Itoa(l), c)
		}
	}
	for name, c := range pools {
		if !c.IsZero() && ValidPoolName(name) {
			put("P"+name, c)
		}
	}
	return out
}

// parseRates turns read_rates' reply (lua/rates.lua) into per-level and
// per-pool rates.
func parseRates(raw []any, levels int) ([]Rates, map[string]Rates) {
	out, pools := make([]Rates, levels), map[string]Rates{}
	for i := 0; i+1 < len(raw); i += 2 {
		f, _ := raw[i].(string)
		v, _ := raw[i+1].(int64)
		if len(f) < 2 {
			continue
		}
		key, kind := f[:len(f)-1], f[len(f)-1]
		r := float64(v) / RateWindow.Seconds()
		if name, ok := strings.CutPrefix(key, "P"); ok && ValidPoolName(name) {
			pr := pools[name]
			pr.add(kind, r)
			pools[name] = pr
		} else if l, err := strconv.Atoi(key); err == nil && l >= 0 && l < levels {
			out[l].add(kind, r)
		}
	}
	return out, pools
}

// add adds r to the rate of kind (d, f, x or s).
func (rs *Rates) add(kind byte, r float64) {
	switch kind {
	case 'd':
		rs.Processed += r
	case 'f':
		rs.Failed += r
	case 'x':
		rs.Preempted += r
	case 's':
		rs.SLABreaches += r
	}
}
