package store

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The fleet check of a reservation (lua/fleet.lua) reads the reserving
// shard's busy hash and running set. On a queue of several shards the
// other shards hold the rest of the fleet's leases and running tasks, in
// slots a script cannot reach: fleetView reads them in two pipelines
// (each shard's busy hash and running tasks at or below the victim's
// level, then those tasks' states) and the reservation passes them to the
// script as ARGV (xbusy, xrun), so the urgent task still preempts the
// fleet's lowest victim. The view is one round trip old when the script
// runs; the runtime's deference to the fleet is bounded (preempt.Policy)
// and so tolerates it.

// fleetView is the rest of the fleet as the reserving shard's script
// reads it: reserveArgs' XBusy, XRun and VPre.
type fleetView struct {
	busy map[string]int64
	run  [][]any // {id, level, worker, leased at, preemptions, pool}
	vpre *int    // the victim's preemptions, when it lives in another shard
}

// maxFleetRunning bounds the running tasks read per shard, as fleet.lua
// bounds its own shard's.
const maxFleetRunning = 50

// fleetView reads the fleet outside shard in (see above).
func (c *Store) fleetView(ctx context.Context, in *Store, req ReserveRequest) (*fleetView, error) {
	var busy []*redis.MapStringStringCmd
	var run []*redis.ZSliceCmd
	var others []*Store
	victim := c.shardOf(req.VictimID)
	var vstate *redis.StringCmd
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range c.shards {
			if s == in {
				continue
			}
			others = append(others, s)
			busy = append(busy, p.HGetAll(ctx, s.keys.busy()))
			run = append(run, p.ZRangeByScoreWithScores(ctx, s.keys.running(), &redis.ZRangeBy{Min: "-inf",
				Max: strconv.Itoa(req.VictimLevel), Count: maxFleetRunning}))
		}
		if victim != in && req.VictimID != "" {
			vstate = p.Get(ctx, victim.keys.state(req.VictimID))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrapf(err, "reserve: fleet")
	}
	v := &fleetView{busy: map[string]int64{}}
	if vstate != nil {
		var st state
		_ = parseState(vstate.Val(), &st)
		n := atoi(st.Pre)
		v.vpre = &n
	}
	type entry struct {
		s   *Store
		id  string
		lvl int64
	}
	var entries []entry
	for i, s := range others {
		for f, n := range busy[i].Val() {
			v.busy[f] += int64(atoi(n))
		}
		for _, z := range run[i].Val() {
			id, _ := z.Member.(string)
			entries = append(entries, entry{s, id, int64(z.Score)})
		}
	}
	if len(entries) == 0 {
		return v, nil
	}
	states := make([]*redis.StringCmd, len(entries))
	_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			states[i] = p.Get(ctx, e.s.keys.state(e.id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrapf(err, "reserve: fleet")
	}
	for i, e := range entries {
		var st state
		if states[i].Err() != nil || parseState(states[i].Val(), &st) != nil || st.W == "" {
			continue // ended since it was listed
		}
		v.run = append(v.run, []any{e.id, e.lvl, st.W, atoi(st.Stt), atoi(st.Pre), st.B})
	}
	return v, nil
}
