package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// heartbeatScript is lua/heartbeat.lua: it registers a live worker and
// extends its leases in one call, and recovers expired leases and ages
// waiting tasks as leasing does.
var heartbeatScript = script("heartbeat.lua")

// encodePools writes pools for the heartbeat script.
func encodePools(pools []PoolLayout) string {
	var b strings.Builder
	for i, p := range pools {
		if i > 0 {
			b.WriteByte('/')
		}
		fmt.Fprintf(&b, "%d:%d:", max(p.Pool, 1), max(p.Size, 0))
		for j, l := range p.Levels {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(l))
		}
		b.WriteString(map[bool]string{false: ":0", true: ":1"}[p.Borrow])
		if ValidPoolName(p.Name) {
			b.WriteString(":" + p.Name)
		}
	}
	return b.String()
}

// heartbeatArgs is the heartbeat script's options, ARGV[5] of
// lua/heartbeat.lua, sent as JSON: that file's header documents each
// field.
type heartbeatArgs struct {
	TTL      int64                 `json:"ttl"`
	Capacity int                   `json:"cap"`
	Lease    int64                 `json:"lease"`
	Age      int64                 `json:"age,omitempty"`
	Ret      int64                 `json:"ret,omitempty"`
	Top      int                   `json:"top"`
	Counts   map[string]rateCounts `json:"counts,omitempty"`
	Pools    string                `json:"pools,omitempty"`
}

// Heartbeat records that hb.Worker is alive with its capacity, extends all
// its leases to now + LeaseDuration and adds its counts to the fleet's
// rates, in one round trip: on a queue of several shards one call per
// shard, all at once, each extending the leases it holds (the rates go to
// shard 0 alone).
func (c *Store) Heartbeat(ctx context.Context, hb Heartbeat) (*HeartbeatReply, error) {
	if !c.sharded() {
		return c.heartbeatOne(ctx, hb)
	}
	parts := make([]Heartbeat, len(c.shards))
	for k := range parts {
		parts[k] = hb
		parts[k].Leases = nil
		if k > 0 {
			parts[k].Counts, parts[k].PoolCounts = nil, nil
		}
	}
	for _, t := range hb.Leases {
		k := shardIndex(t.ID, len(c.shards))
		parts[k].Leases = append(parts[k].Leases, t)
	}
	replies := make([]*HeartbeatReply, len(c.shards))
	errs := make([]error, len(c.shards))
	var wg sync.WaitGroup
	for k, s := range c.shards {
		wg.Go(func() { replies[k], errs[k] = s.heartbeatOne(ctx, parts[k]) })
	}
	wg.Wait()
	if !slices.Contains(errs, nil) {
		return nil, errs[0]
	}
	// One shard's master down does not fail the rest: their leases are
	// extended and their lost ones reported (a lease takes from the
	// shards that answer, too). Without shard 0 the reply says so
	// (NoFleet): its pauses are not the ones in force.
	out := replies[0]
	if out == nil {
		out = &HeartbeatReply{NoFleet: true}
	}
	var unreached []error
	for k, r := range replies {
		switch {
		case errs[k] != nil:
			unreached = append(unreached, fmt.Errorf("shard %d: %w", k, errs[k]))
		case k > 0:
			out.Lost = append(out.Lost, r.Lost...)
			out.Canceled = append(out.Canceled, r.Canceled...)
		}
	}
	out.Unreached = errors.Join(unreached...)
	return out, nil
}

// heartbeatOne is Heartbeat in c's shard.
func (c *Store) heartbeatOne(ctx context.Context, hb Heartbeat) (*HeartbeatReply, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	if hb.TTL <= 0 {
		hb.TTL = c.cfg.LeaseDuration
	}
	js, err := json.Marshal(heartbeatArgs{TTL: hb.TTL.Milliseconds(), Capacity: hb.Capacity,
		Lease: c.cfg.LeaseDuration.Milliseconds(), Age: c.cfg.AgeAfter.Milliseconds(), Ret: c.cfg.Retention.Milliseconds(), Top: c.cfg.Levels - 1,
		Counts: encodeCounts(hb.Counts, hb.PoolCounts), Pools: encodePools(hb.Pools)})
	if err != nil {
		return nil, wrapf(err, "heartbeat")
	}
	args := make([]any, 0, 5+2*len(hb.Leases))
	args = append(args, c.keys.prefix, hb.Worker, c.scriptNow(), schemaVersion, js)
	more := make([]string, 0, len(hb.Leases))
	for _, t := range hb.Leases {
		args = append(args, t.ID, t.Token)
		more = append(more, c.keys.state(t.ID))
	}
	raw, err := heartbeatScript.Run(ctx, c.rdb, c.keys.declare(c.sk.heartbeat, more...), args...).Slice()
	if err != nil {
		return nil, wrapf(scriptErr(err), "heartbeat")
	}
	reply := &HeartbeatReply{}
	if len(raw) > 0 {
		l, _ := raw[0].([]any)
		for _, id := range l {
			if s, ok := id.(string); ok {
				reply.Lost = append(reply.Lost, s)
			}
		}
	}
	if len(raw) > 2 {
		p, _ := raw[2].(string)
		reply.Paused = c.parsePaused(p)
	}
	if len(raw) > 3 {
		l, _ := raw[3].([]any)
		for _, id := range l {
			if s, ok := id.(string); ok {
				reply.Canceled = append(reply.Canceled, s)
			}
		}
	}
	return reply, nil
}

// deregisterScript is lua/deregister.lua: it removes a worker's record.
var deregisterScript = script("deregister.lua")

// deregisterOne is Deregister in c's shard.
func (c *Store) deregisterOne(ctx context.Context, worker string) error {
	if err := deregisterScript.Run(ctx, c.rdb, c.keys.declare(c.sk.fleet), worker).Err(); err != nil {
		return wrapf(err, "deregister %s", worker)
	}
	return nil
}

// checkpointScript is lua/checkpoint.lua: it saves checkpoint bytes under
// a valid lease and extends the lease.
var checkpointScript = script("checkpoint.lua")

// SaveCheckpoint stores data as the checkpoint of a leased task in one
// round trip, fenced by its lease token: a stale holder gets ErrLeaseLost
// and cannot overwrite newer state. It returns the new sequence number.
// The checkpoint survives retries, preemptions, crashes and shutdowns and
// is deleted when the task is done.
func (c *Store) SaveCheckpoint(ctx context.Context, taskID, token string, data []byte) (int64, error) {
	if s := c.shardOf(taskID); s != c {
		return s.SaveCheckpoint(ctx, taskID, token, data)
	}
	if limit := c.cfg.MaxCheckpointBytes; limit >= 0 && len(data) > limit {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrCheckpointTooLarge, len(data), limit)
	}
	seq, err := c.run(ctx, checkpointScript,
		c.keys.declare([]string{c.keys.state(taskID), c.keys.checkpoint(taskID)}, c.sk.checkpoint...),
		c.keys.prefix, taskID, token, data, c.scriptNow(), c.cfg.LeaseDuration.Milliseconds()).Int64()
	if err = scriptErr(err); err != nil {
		return 0, wrapf(err, "checkpoint") // the caller knows the task
	}
	return seq, nil
}
