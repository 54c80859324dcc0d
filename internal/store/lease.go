package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"
)

// leaseArgs is the lease script's options, ARGV[8] of lua/lease.lua, sent
// as JSON: that file's header documents each field. What a plain lease
// leaves at its zero value is left out.
type leaseArgs struct {
	Count   int              `json:"count,omitempty"`
	Min     int              `json:"min,omitempty"`
	Skip    []int            `json:"skip,omitempty"`
	Age     int64            `json:"age,omitempty"`
	Ret     int64            `json:"ret,omitempty"`
	Groups  []leaseGroupArgs `json:"groups,omitempty"`
	Reserve *reserveArgs     `json:"reserve,omitempty"`
	By      int64            `json:"by,omitempty"`
	View    bool             `json:"view,omitempty"`
}

// leaseGroupArgs is one of leaseArgs.Groups (a LeaseGroup).
type leaseGroupArgs struct {
	Count   int    `json:"count"`
	Levels  []int  `json:"levels"`
	Pool    string `json:"pool,omitempty"`
	Spare   bool   `json:"spare,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
}

// reserveArgs is leaseArgs.Reserve, the options of a reservation.
type reserveArgs struct {
	Victim      string `json:"victim"`
	Level       int    `json:"level"`
	MinRun      int64  `json:"min_run"`
	MaxPre      int    `json:"max_pre"`
	Never       []int  `json:"never,omitempty"`
	IgnoreFleet bool   `json:"ignore_fleet,omitempty"`
	Pool        string `json:"pool,omitempty"`
	// The rest of the fleet, on a queue of several shards (fleetView).
	XBusy map[string]int64 `json:"xbusy,omitempty"`
	XRun  [][]any          `json:"xrun,omitempty"`
	VPre  *int             `json:"vpre,omitempty"`
}

// groupArgs turns groups into the lease script's: levels highest first,
// without skipped, unknown or repeated ones; a spare group has no pool.
func groupArgs(groups []LeaseGroup, skip []int, levels int) []leaseGroupArgs {
	var out []leaseGroupArgs
	for _, g := range groups {
		a := leaseGroupArgs{Count: max(g.Count, 0), Levels: []int{}, Spare: g.Spare, Resumed: g.resumed}
		if g.Spare {
			a.Count = 0
		} else if g.Pool > 0 {
			a.Pool = strconv.Itoa(g.Pool)
		}
		ls := slices.Clone(g.Levels)
		slices.Sort(ls)
		for i := len(ls) - 1; i >= 0; i-- {
			if l := ls[i]; l >= 0 && l < levels && !slices.Contains(skip, l) && (i == len(ls)-1 || ls[i+1] != l) {
				a.Levels = append(a.Levels, l)
			}
		}
		out = append(out, a)
	}
	return out
}

// Lease promotes due scheduled tasks, recovers expired leases and leases up
// to req.Count pending tasks, highest level first, FIFO within a level, in
// one round trip. The leased tasks get the call's fresh token (a lease is
// the pair of ID and token) and a deadline of now + LeaseDuration.
func (c *Store) Lease(ctx context.Context, req LeaseRequest) (*LeaseResult, error) {
	if c.sharded() {
		return c.leaseShards(ctx, req)
	}
	res, _, err := c.lease(ctx, req, nil)
	return res, err
}

// Reserve leases one task at req.MinLevel or above, for preemption, only if
// no other live worker in the fleet has a free slot (else
// ErrFreeSlotInFleet) and no other live worker runs an eligible preemptible
// task below req.VictimLevel, or at it and preempted fewer times than the
// victim (else ErrLowerVictimElsewhere); a crashed
// worker's tasks do not count, they wait for recovery. On success the
// victim leaves the fleet's running set, so no other worker picks it too.
// It returns ErrNoTask when nothing qualifies.
func (c *Store) Reserve(ctx context.Context, req ReserveRequest) (*Task, *LeaseResult, error) {
	if !c.sharded() {
		return c.reserveOne(ctx, req)
	}
	// The shard and level are chosen from views, so the call leases only
	// while they are under shardLeaseWindow old (ReserveRequest.by), and
	// only that level or above: when another worker took the task it was
	// for, a lower one must not take its place while another shard's task
	// of the chosen level waits. A call that leased nothing (late, or its
	// task gone) is made again from fresh views.
	for try := 1; ; try++ {
		s, level, by, err := c.reserveShard(ctx, req)
		call := req
		call.by, call.MinLevel = by, max(req.MinLevel, level)
		if err == nil && !req.IgnoreFleet {
			call.fleet, err = c.fleetView(ctx, s, call)
		}
		if err != nil {
			return nil, &LeaseResult{}, err
		}
		t, res, err := s.reserveOne(ctx, call)
		if errors.Is(err, ErrNoTask) && try < shardLeaseRounds {
			continue
		}
		if v := c.shardOf(req.VictimID); err == nil && v != s && req.VictimID != "" {
			// The script took the victim out of its own shard's running set
			// only: out of the victim's too, so no other worker picks it.
			_ = v.rdb.ZRem(ctx, v.keys.running(), req.VictimID).Err()
		}
		return t, res, err
	}
}

// reserveOne is Reserve in c's shard.
func (c *Store) reserveOne(ctx context.Context, req ReserveRequest) (*Task, *LeaseResult, error) {
	res, _, err := c.lease(ctx, LeaseRequest{Worker: req.Worker, Count: 1, MinLevel: req.MinLevel, Skip: req.Skip,
		by: req.by}, &req)
	if err != nil {
		return nil, res, err
	}
	if len(res.Tasks) == 0 {
		return nil, res, ErrNoTask
	}
	return res.Tasks[0], res, nil
}

// leaseScript is lua/lease.lua, assembled from the helper files its
// "-- uses:" line names: it promotes, recovers and ages due tasks, ends the
// leases of the acks it carries, checks the fleet for a reservation and
// leases up to a count of tasks, in one round trip.
var leaseScript = script("lease.lua")

func (c *Store) lease(ctx context.Context, req LeaseRequest, rv *ReserveRequest) (*LeaseResult, int, error) {
	if req.Worker == "" {
		return nil, 0, errors.New("overtake: lease: empty worker ID")
	}
	if req.Count < 1 {
		req.Count = 1
	}
	if err := c.ready(ctx); err != nil {
		return nil, 0, err
	}
	minLevel := max(req.MinLevel, 0)
	if minLevel >= c.cfg.Levels {
		return &LeaseResult{}, 0, nil
	}
	opts := leaseArgs{Count: req.Count, Min: minLevel, Skip: req.Skip, Age: c.cfg.AgeAfter.Milliseconds(),
		Ret:    c.cfg.Retention.Milliseconds(),
		Groups: groupArgs(req.Groups, req.Skip, c.cfg.Levels), By: req.by, View: req.view && rv == nil}
	if rv != nil {
		opts.Skip = slices.Concat(rv.NeverPreempt, req.Skip)
		opts.Reserve = &reserveArgs{Victim: rv.VictimID, Level: rv.VictimLevel, MinRun: rv.MinRunTime.Milliseconds(),
			MaxPre: rv.MaxPreemptions, Never: rv.NeverPreempted, IgnoreFleet: rv.IgnoreFleet}
		if rv.Pool > 0 {
			opts.Reserve.Pool = strconv.Itoa(rv.Pool)
		}
		if f := rv.fleet; f != nil {
			opts.Reserve.XBusy, opts.Reserve.XRun, opts.Reserve.VPre = f.busy, f.run, f.vpre
		}
	}
	js, err := json.Marshal(opts)
	if err != nil {
		return nil, 0, wrapf(err, "lease")
	}
	args := []any{c.keys.prefix, c.scriptNow(), c.cfg.LeaseDuration.Milliseconds(), req.Worker, newToken(),
		c.cfg.Levels - 1, c.sweep.due(c.now()), js}
	// The call carries the Acks queued meanwhile (group commit): they need
	// no call of their own. Not with Retention (acks keep records then) nor
	// in a reservation (refused ones return early).
	var acks []*groupWait[finishOp]
	var more []string // the carried acks' keys
	if rv == nil && c.cfg.Retention <= 0 {
		acks = c.carried.take(maxAckBatch) // first: their slots are counted free
		acks = append(acks, c.acks.take(maxAckBatch-len(acks))...)
		more = make([]string, 0, 3*len(acks))
		for _, w := range acks {
			args = append(args, w.item.t.ID, w.item.t.Token)
			more = c.keys.taskKeys(more, w.item.t.ID)
		}
	}
	if len(acks) > 0 {
		// Like a grouped call, not tied to one caller's context.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
		defer cancel()
	}
	raw, err := slice(c.run(ctx, leaseScript, c.keys.declare(c.sk.lease, more...), args...))
	if len(acks) > 0 {
		var res []any
		if len(raw) > 5 && (err == nil || errors.Is(err, ErrNotReplicated)) {
			res, _ = raw[5].([]any)
		}
		answer(acks, ackResults(acks, res, err))
	}
	if errors.Is(err, ErrNotReplicated) {
		// The lease happened on the primary: its tasks are held and run
		// (a failover at worst runs one again); only the carried acks are
		// told they were not confirmed.
		err = nil
	}
	if err != nil {
		return nil, 0, wrapf(scriptErr(err), "lease")
	}
	if len(raw) == 0 {
		return nil, 0, errors.New("overtake: lease: empty reply")
	}
	head, _ := raw[0].(int64)
	switch head {
	case -1:
		return &LeaseResult{}, 0, ErrFreeSlotInFleet
	case -2:
		return &LeaseResult{}, 0, ErrLowerVictimElsewhere
	}
	if len(raw) < 6 {
		return nil, 0, errors.New("overtake: lease: short reply")
	}
	res := &LeaseResult{}
	if head > 0 {
		res.NextDue = c.now().Add(time.Duration(head) * time.Millisecond)
		c.sweep.at(res.NextDue)
	}
	started, _ := raw[1].(int64)
	res.at = started
	deadline, _ := raw[2].(int64)
	bad, _ := raw[3].([]any)
	for _, b := range bad {
		switch b := b.(type) {
		case string:
			res.Corrupt = append(res.Corrupt, scriptErr(errors.New(b)))
		case []any: // {id, level, message}: a task set aside
			if len(b) == 3 {
				id, _ := b[0].(string)
				lvl, _ := b[1].(string)
				msg, _ := b[2].(string)
				err := scriptErr(errors.New(msg))
				res.Corrupt = append(res.Corrupt, err)
				res.SetAside = append(res.SetAside, SetAside{ID: id, Level: atoi(lvl), Err: err})
			}
		}
	}
	if gc, _ := raw[4].([]any); len(req.Groups) > 0 {
		for _, v := range gc {
			k, _ := v.(int64)
			res.GroupCounts = append(res.GroupCounts, int(k))
		}
	}
	first := 6 // the first task's entry
	if opts.View && len(raw) > 6 {
		first = 7
		vs, _ := raw[6].([]any)
		for _, v := range vs {
			k, _ := v.(int64)
			res.view = append(res.view, k)
		}
	}
	n := 0
	for i := first; i+3 < len(raw); i += 4 {
		id, _ := raw[i].(string)
		t, err := decodeTask(id, raw[i+1], raw[i+2], raw[i+3])
		t.LeasedAt, t.LeaseDeadline = msTime(started), msTime(deadline)
		n++
		if err != nil {
			res.Malformed = append(res.Malformed, Malformed{Task: t, Err: err})
			continue
		}
		res.Tasks = append(res.Tasks, t)
	}
	return res, n, nil
}

// rejoinScript is lua/rejoin.lua: it puts a running task back in the
// fleet's running set after a reservation did not preempt it.
var rejoinScript = script("rejoin.lua")

// Rejoin returns t, a task the caller runs, to the fleet's view of running
// preemptible tasks after a Reserve named it as the victim but the caller
// did not preempt it (a slot freed meanwhile, or the reserved record was
// malformed), so other workers see it again when they look for the lowest
// victim. A stale holder changes nothing.
func (c *Store) Rejoin(ctx context.Context, t *Task) error {
	if s := c.shardOf(t.ID); s != c {
		return s.Rejoin(ctx, t)
	}
	err := rejoinScript.Run(ctx, c.rdb,
		c.keys.declare([]string{c.keys.state(t.ID), c.keys.task(t.ID)}, c.sk.rejoin...), c.keys.prefix, t.ID, t.Token, c.cfg.Levels-1).Err()
	if err != nil {
		return wrapf(err, "rejoin %s", t.ID)
	}
	return nil
}
