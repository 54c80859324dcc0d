package queue

import (
	"github.com/overtake/overtake/internal/wire"

	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// encodeGroups writes groups for the lease script ("count:l,l;", "b:l;"),
// levels highest first, without skipped or unknown ones.
func encodeGroups(groups []wire.LeaseGroup, skip []int, levels int) string {
	var b strings.Builder
	for _, g := range groups {
		if g.Spare {
			b.WriteString("b:")
		} else {
			b.WriteString(strconv.Itoa(max(g.Count, 0)) + ":")
		}
		ls := slices.Clone(g.Levels)
		slices.Sort(ls)
		for i := len(ls) - 1; i >= 0; i-- {
			if l := ls[i]; l >= 0 && l < levels && !slices.Contains(skip, l) && (i == len(ls)-1 || ls[i+1] != l) {
				b.WriteString(strconv.Itoa(l) + ",")
			}
		}
		b.WriteByte(':')
		if g.Pool > 0 && !g.Spare {
			b.WriteString(strconv.Itoa(g.Pool))
		}
		b.WriteByte(';')
	}
	return b.String()
}

// Lease promotes due scheduled tasks, recovers expired leases and leases up
// to req.Count pending tasks, highest level first, FIFO within a level, in
// one round trip. The leased tasks get the call's fresh token (a lease is
// the pair of ID and token) and a deadline of now + LeaseDuration.
func (c engine) Lease(ctx context.Context, req wire.LeaseRequest) (*leaseResult, error) {
	res, _, err := c.lease(ctx, req, nil)
	return res, err
}

// Reserve leases one task at req.MinLevel or above, for preemption, only if
// no other live worker in the fleet has a free slot (else
// wire.ErrFreeSlotInFleet) and no other live worker runs an eligible preemptible
// task below req.VictimLevel (else wire.ErrLowerVictimElsewhere); a crashed
// worker's tasks do not count, they wait for recovery. On success the
// victim leaves the fleet's running set, so no other worker picks it too.
// It returns wire.ErrNoTask when nothing qualifies.
func (c engine) Reserve(ctx context.Context, req wire.ReserveRequest) (*Task, *leaseResult, error) {
	res, _, err := c.lease(ctx, wire.LeaseRequest{Worker: req.Worker, Count: 1, MinLevel: req.MinLevel, Skip: req.Skip}, &req)
	if err != nil {
		return nil, res, err
	}
	if len(res.Tasks) == 0 {
		return nil, res, wire.ErrNoTask
	}
	return res.Tasks[0], res, nil
}

func (c *Client) lease(ctx context.Context, req wire.LeaseRequest, rv *wire.ReserveRequest) (*leaseResult, int, error) {
	if req.Worker == "" {
		return nil, 0, errors.New("overtake: lease: empty worker ID")
	}
	if req.Count < 1 {
		req.Count = 1
	}
	minLevel := max(req.MinLevel, 0)
	if minLevel >= c.cfg.Levels {
		return &leaseResult{}, 0, nil
	}
	args := []any{c.keys.prefix, c.scriptNow(), c.cfg.LeaseDuration.Milliseconds(), req.Worker,
		req.Count, minLevel, c.cfg.Levels - 1, newToken()}
	if rv != nil {
		args = append(args, "1", rv.VictimID, rv.VictimLevel, rv.MinRunTime.Milliseconds(), rv.MaxPreemptions,
			levelSet(rv.NeverPreempted), levelSet(slices.Concat(rv.NeverPreempt, req.Skip)))
	} else {
		args = append(args, "0", "", 0, 0, -1, ",", levelSet(req.Skip))
	}
	ignore := "0"
	if rv != nil && rv.IgnoreFleet {
		ignore = "1"
	}
	pool := ""
	if rv != nil && rv.Pool > 0 {
		pool = strconv.Itoa(rv.Pool)
	}
	args = append(args, c.cfg.AgeAfter.Milliseconds(), ignore, c.sweep.due(c.now()),
		encodeGroups(req.Groups, req.Skip, c.cfg.Levels), pool)
	// The call carries the Acks queued meanwhile (group commit): they need
	// no call of their own. Not with Retention (acks keep records then) nor
	// in a reservation (refused ones return early).
	var acks []*groupWait[finishOp]
	if rv == nil && c.cfg.Retention <= 0 {
		acks = c.carried.take(maxAckBatch) // first: their slots are counted free
		acks = append(acks, c.acks.take(maxAckBatch-len(acks))...)
		for _, w := range acks {
			args = append(args, w.item.t.ID, w.item.t.Token)
		}
	}
	if len(acks) > 0 {
		// Like a grouped call, not tied to one caller's context.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
		defer cancel()
	}
	raw, err := c.runWrite(ctx, leaseScript, []string{c.keys.leases()}, args...).Slice()
	if len(acks) > 0 {
		var res []any
		if err == nil && len(raw) > 5 {
			res, _ = raw[5].([]any)
		}
		answer(acks, ackResults(acks, res, err))
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
		return &leaseResult{}, 0, wire.ErrFreeSlotInFleet
	case -2:
		return &leaseResult{}, 0, wire.ErrLowerVictimElsewhere
	}
	if len(raw) < 6 {
		return nil, 0, errors.New("overtake: lease: short reply")
	}
	res := &leaseResult{}
	if head > 0 {
		res.NextDue = c.now().Add(time.Duration(head) * time.Millisecond)
		c.sweep.at(res.NextDue)
	}
	started, _ := raw[1].(int64)
	deadline, _ := raw[2].(int64)
	bad, _ := raw[3].([]any)
	for _, b := range bad {
		if s, ok := b.(string); ok {
			res.Corrupt = append(res.Corrupt, scriptErr(errors.New(s)))
		}
	}
	if gc, _ := raw[4].([]any); len(req.Groups) > 0 {
		for _, v := range gc {
			k, _ := v.(int64)
			res.GroupCounts = append(res.GroupCounts, int(k))
		}
	}
	n := 0
	for i := 6; i+3 < len(raw); i += 4 {
		id, _ := raw[i].(string)
		t, err := decodeTask(id, raw[i+1], raw[i+2], raw[i+3])
		t.LeasedAt, t.LeaseDeadline = msTime(started), msTime(deadline)
		n++
		if err != nil {
			res.Malformed = append(res.Malformed, malformedTask{Task: t, Err: err})
			continue
		}
		res.Tasks = append(res.Tasks, t)
	}
	return res, n, nil
}

// levelSet encodes levels as ",l1,l2," for string.find in Lua.
func levelSet(levels []int) string {
	s := ","
	for _, l := range levels {
		s += strconv.Itoa(l) + ","
	}
	return s
}

// rejoinScript puts a running task back in the fleet's running set after a
// reservation named it as the victim (which takes it out) but the caller
// did not preempt it after all. Fenced by the lease token.
//
//	KEYS[1] task state  ARGV[1] prefix  ARGV[2] id  ARGV[3] token
//	ARGV[4] the top level (whose tasks the set leaves out: none is below it)
//
// Returns 1 if the task is in the running set again, else 0.
var rejoinScript = newScript(`
local s = sget(ARGV[2])
local al = s and tonumber(s.al)
if not s or s.tk ~= ARGV[3] or not al or al >= tonumber(ARGV[4]) then return 0 end
local h = hdr_of(ARGV[2])
if (h and h.prb == '0') or guard('running', 'zset') then return 0 end
redis.call('ZADD', P .. 'running', s.al, ARGV[2])
return 1
`)

// Rejoin returns t, a task the caller runs, to the fleet's view of running
// preemptible tasks after a Reserve named it as the victim but the caller
// did not preempt it (a slot freed meanwhile, or the reserved record was
// malformed), so other workers see it again when they look for the lowest
// victim. A stale holder changes nothing.
func (c engine) Rejoin(ctx context.Context, t *Task) error {
	err := rejoinScript.Run(ctx, c.rdb, []string{c.keys.state(t.ID)}, c.keys.prefix, t.ID, t.Token, c.cfg.Levels-1).Err()
	if err != nil {
		return wrapf(err, "rejoin %s", t.ID)
	}
	return nil
}
