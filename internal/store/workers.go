package store

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WorkerInfo describes one live worker of the fleet, as its last heartbeat
// left it.
type WorkerInfo struct {
	// ID is the worker's ID (runtime.Config.WorkerID).
	ID string
	// Capacity is how many tasks it runs at once (0: shutting down).
	Capacity int
	// Busy is how many leases it holds.
	Busy int
	// LastHeartbeat is when its last heartbeat arrived (Redis's clock).
	LastHeartbeat time.Time
	// AliveUntil is when it stops counting as alive without another
	// heartbeat.
	AliveUntil time.Time
	// Pools are its slot pools (a runtime's Config.Pools), if any.
	Pools []WorkerPool
}

// WorkerPool is one slot pool of a live worker.
type WorkerPool struct {
	Name   string
	Levels []int
	Size   int
	Busy   int // its slots held
	Borrow bool
}

// workersScript is lua/workers.lua: it reads the live workers with their
// capacity and busy counts.
var workersScript = script("workers.lua")

// maxWorkersListed bounds one Workers call.
const maxWorkersListed = 1000

// workersOne is Workers in c's shard: returns the live workers (at most 1000), by ID.
func (c *Store) workersOne(ctx context.Context) ([]WorkerInfo, error) {
	raw, err := workersScript.Run(ctx, c.rdb, c.keys.declare(c.sk.fleet), c.keys.prefix, c.scriptNow(),
		maxWorkersListed).Slice()
	if err != nil {
		return nil, wrapf(scriptErr(err), "workers")
	}
	out := make([]WorkerInfo, 0, len(raw))
	for _, r := range raw {
		v, _ := r.([]any)
		if len(v) < 4 {
			continue
		}
		id, _ := v[0].(string)
		until, _ := v[1].(string)
		capField, _ := v[2].(string)
		busy, _ := v[3].(string)
		w := WorkerInfo{ID: id}
		if ms, err := strconv.ParseFloat(until, 64); err == nil {
			w.AliveUntil = time.UnixMilli(int64(ms))
		}
		parts := strings.SplitN(capField, "@", 3)
		w.Capacity, _ = strconv.Atoi(parts[0])
		if len(parts) > 1 {
			if ms, err := strconv.ParseInt(parts[1], 10, 64); err == nil {
				w.LastHeartbeat = time.UnixMilli(ms)
			}
		}
		if len(parts) > 2 {
			w.Pools = parseWorkerPools(parts[2], v[4:])
		}
		w.Busy, _ = strconv.Atoi(busy)
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// parseWorkerPools reads a heartbeat's pool layout ("pool:size:l,l:borrow:
// name/...") with the busy counts the script read for each pool, in order.
func parseWorkerPools(layout string, busy []any) []WorkerPool {
	var out []WorkerPool
	for i, e := range strings.Split(layout, "/") {
		f := strings.Split(e, ":")
		if len(f) < 4 {
			continue
		}
		p := WorkerPool{Name: f[0], Borrow: f[3] == "1"}
		if len(f) > 4 {
			p.Name = f[4]
		}
		p.Size, _ = strconv.Atoi(f[1])
		for l := range strings.SplitSeq(f[2], ",") {
			if n, err := strconv.Atoi(l); err == nil {
				p.Levels = append(p.Levels, n)
			}
		}
		if i < len(busy) {
			b, _ := busy[i].(string)
			p.Busy, _ = strconv.Atoi(b)
		}
		out = append(out, p)
	}
	return out
}
