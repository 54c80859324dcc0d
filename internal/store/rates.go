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

// rateKinds are the outcomes a worker counts, defined once: the order of
// a heartbeat's counts (rateCounts), and the letter (key) that ends a rate
// bucket's field. lua/buckets.lua's RATE_KINDS is generated from it (go
// generate; TestLuaGenerated).
var rateKinds = [...]struct {
	key   byte
	name  string
	count func(LevelCounts) int64
	rate  func(*Rates) *float64
}{
	{'d', "processed", func(c LevelCounts) int64 { return c.Processed }, func(r *Rates) *float64 { return &r.Processed }},
	{'f', "failed", func(c LevelCounts) int64 { return c.Failed }, func(r *Rates) *float64 { return &r.Failed }},
	{'x', "preempted", func(c LevelCounts) int64 { return c.Preempted }, func(r *Rates) *float64 { return &r.Preempted }},
	{'s', "SLA breaches", func(c LevelCounts) int64 { return c.SLABreaches }, func(r *Rates) *float64 { return &r.SLABreaches }},
}

// rateCounts are one level's or pool's counts in a heartbeat, one per
// kind of rateKinds, in its order.
type rateCounts [len(rateKinds)]int64

// encodeCounts returns the non-zero counts for add_counts (lua/counts.lua),
// by level ("<level>") and by pool ("P<name>", names that are not
// ValidPoolName left out); nil when none.
func encodeCounts(m map[int]LevelCounts, pools map[string]LevelCounts) map[string]rateCounts {
	var out map[string]rateCounts
	put := func(key string, c LevelCounts) {
		if out == nil {
			out = map[string]rateCounts{}
		}
		var rc rateCounts
		for i, k := range rateKinds {
			rc[i] = max(k.count(c), 0)
		}
		out[key] = rc
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

// add adds r to the rate of kind (a key of rateKinds).
func (rs *Rates) add(kind byte, r float64) {
	for _, k := range rateKinds {
		if k.key == kind {
			*k.rate(rs) += r
			return
		}
	}
}
