package queue

import (
	"context"
	"fmt"
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
}

// workersScript reads the live workers with their capacity (stored with
// the heartbeat's time as "cap@ms") and busy count in one round trip.
//
//	KEYS[1] alive  ARGV[1] prefix  ARGV[2] now ms or ""  ARGV[3] max workers
var workersScript = newScript(`
local g = guard('alive', 'zset', 'cap', 'hash', 'busy', 'hash')
if g then return redis.error_reply(g) end
local now = clock(ARGV[2])
local live = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for i = 1, #live, 2 do
  local w = live[i]
  out[#out + 1] = {w, live[i + 1], redis.call('HGET', P .. 'cap', w) or '', redis.call('HGET', P .. 'busy', w) or '0'}
end
return out
`)

// maxWorkersListed bounds one Workers call.
const maxWorkersListed = 1000

// Workers returns the live workers (at most 1000), by ID.
func (c *Client) Workers(ctx context.Context) ([]WorkerInfo, error) {
	raw, err := workersScript.Run(ctx, c.rdb, []string{c.keys.alive()}, c.keys.prefix, c.scriptNow(),
		maxWorkersListed).Slice()
	if err != nil {
		return nil, fmt.Errorf("overtake: workers: %w", scriptErr(err))
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
		capStr, at, _ := strings.Cut(capField, "@")
		w.Capacity, _ = strconv.Atoi(capStr)
		if ms, err := strconv.ParseInt(at, 10, 64); err == nil {
			w.LastHeartbeat = time.UnixMilli(ms)
		}
		w.Busy, _ = strconv.Atoi(busy)
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
