package store

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// A lease on a queue of several shards keeps one strict priority order
// across them in two steps. First one pipeline reads the length of every
// level's list in every shard, and how many tasks at its head ran before (a
// preempted task waits at the head of its level): one lua/peek.lua call
// per shard, all in one round trip (peek). The worker then
// allocates its free slots from the top level down, across the shards,
// group by group as a one-shard lease would (allocate), and second sends
// the lease calls of the shards it allocated slots in, in waves by rank
// (shards_waves.go), each asking for exactly its allocation, level by
// level: a shard never gives a task of a level the allocation did not
// choose. A task of a higher level
// that arrives between the steps, one round trip, is seen by the next
// lease; one that another worker took meanwhile leaves the slot free for
// the next lease. A shard whose sweep is due (promotion of due tasks,
// recovery of expired leases, aging) is called even with nothing
// allocated, so every shard is swept as often as a one-shard queue.

// shardLeaseWindow bounds the age of the first step's reads when a second
// step's call leases (LeaseRequest.by): issue 31 defines a priority
// inversion as a task leased at t while a higher one had been pending
// since before t − 10ms; under 10ms, with a margin for the scripts'
// whole milliseconds, every such task was pending when its shard was
// peeked, so the allocation chose it first.
const shardLeaseWindow = 7 * time.Millisecond

// leaseShards is Lease on a queue of several shards (see above).
// A round whose calls came too late (their by passed) leased nothing
// where it allocated, and one that got fewer than it allocated read a
// view that was no longer true (another worker took those tasks): it is
// run again for what it did not get, from the views its calls' replies
// left, up to shardLeaseRounds rounds in all.
func (c *Store) leaseShards(ctx context.Context, req LeaseRequest) (*LeaseResult, error) {
	if req.Worker == "" {
		return nil, errors.New("overtake: lease: empty worker ID")
	}
	if req.Count < 1 {
		req.Count = 1
	}
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	var out *LeaseResult
	for round := 1; ; round++ {
		res, allocated, late, err := c.leaseRound(ctx, req, round == shardLeaseRounds)
		if err != nil {
			if out != nil {
				break // what earlier rounds leased is held
			}
			return nil, err
		}
		got := len(res.Tasks) + len(res.Malformed)
		out = mergeLease(out, res)
		req.Count -= got
		for i := range req.Groups {
			if i < len(res.GroupCounts) && !req.Groups[i].Spare {
				req.Groups[i].Count -= res.GroupCounts[i]
			}
		}
		if (!late && got >= allocated) || req.Count < 1 {
			break
		}
		if round == shardLeaseRounds {
			// The last round too came late or found its tasks taken, with
			// tasks it allocated left pending: the caller looks again at
			// once (NextDue now), not at its next poll or wake-up, which
			// no one sends for tasks already pending.
			if got < allocated {
				out.NextDue = c.now()
			}
			break
		}
	}
	// Highest level first, as from one shard.
	slices.SortStableFunc(out.Tasks, func(a, b *Task) int { return cmp.Compare(b.Level, a.Level) })
	return out, nil
}

// shardLeaseRounds bounds the rounds of one lease (leaseShards).
const shardLeaseRounds = 3

// carryFlushAt is how many acks a shard out of the rotation (leaseStart)
// carries (CarryAck) before a lease calls it for them alone: a shard the
// allocations pass by does not keep its acks waiting for the
// dispatcher's next pause. A shard of the rotation keeps them for its
// turn, up to carryFlushMax.
const (
	carryFlushAt  = 16
	carryFlushMax = 192
)

// newLeaseResult is an empty result of a request of groups groups (its
// GroupCounts nil without groups, as one shard's lease reports them).
func newLeaseResult(groups int) *LeaseResult {
	res := &LeaseResult{}
	if groups > 0 {
		res.GroupCounts = make([]int, groups)
	}
	return res
}

// mergeLease adds b's tasks and counts to a (nil: none yet); b's
// GroupCounts are counted by a's groups.
func mergeLease(a, b *LeaseResult) *LeaseResult {
	if a == nil {
		return b
	}
	a.Tasks = append(a.Tasks, b.Tasks...)
	a.Malformed = append(a.Malformed, b.Malformed...)
	a.Corrupt = append(a.Corrupt, b.Corrupt...)
	a.SetAside = append(a.SetAside, b.SetAside...)
	for i := range min(len(a.GroupCounts), len(b.GroupCounts)) {
		a.GroupCounts[i] += b.GroupCounts[i]
	}
	if !b.NextDue.IsZero() && (a.NextDue.IsZero() || b.NextDue.Before(a.NextDue)) {
		a.NextDue = b.NextDue
	}
	return a
}

// leaseRound is one round of a sharded lease: the views (shards_view.go),
// the allocation and the calls. It returns how many tasks it allocated and
// whether the calls were sent later than their by allows (by the Store's
// clock, Config.Clock). Unless last, a round already late when its calls
// would go sends none.
func (c *Store) leaseRound(ctx context.Context, req LeaseRequest, last bool) (_ *LeaseResult, allocated int, late bool,
	_ error) {
	ws := c.wants(req)
	wanted := 0
	for _, w := range ws {
		if !w.spare {
			wanted += w.count
		}
	}
	vs, read, err := c.viewsOf(ctx, viewFresh, nil)
	if err != nil {
		return nil, 0, false, wrapf(err, "lease")
	}
	allocs, allocated, counted, start, rota := c.allocateViews(ws, vs)
	if counted < wanted && slices.Contains(read, false) {
		// The views held may miss tasks that came since: read them again
		// before leaving slots free.
		again := make([]bool, len(read))
		for k, r := range read {
			again[k] = !r
		}
		if vs, _, err = c.viewsOf(ctx, viewFresh, again); err != nil {
			return nil, 0, false, wrapf(err, "lease")
		}
		allocs, allocated, _, start, rota = c.allocateViews(ws, vs)
	}
	// The oldest view read bounds the calls (by), on the scripts' clock
	// and this host's.
	var oldest int64
	var peeked time.Time
	for _, v := range vs {
		if v.got.IsZero() {
			continue
		}
		if oldest == 0 || v.at < oldest {
			oldest = v.at
		}
		if peeked.IsZero() || v.got.Before(peeked) {
			peeked = v.got
		}
	}
	// A shard with a due scheduled task or an expired lease is swept now;
	// the earliest due time of any shard is the lease's NextDue.
	var nextDue time.Time
	now := c.now()
	for k, s := range c.shards {
		due := vs[k].due
		if due.IsZero() {
			continue
		}
		s.sweep.at(due)
		if due.After(vs[k].got) && (nextDue.IsZero() || due.Before(nextDue)) {
			nextDue = due
		}
	}
	if !last && c.now().Sub(peeked) > shardLeaseWindow {
		// Too late already: calls would lease nothing (by); read again.
		return newLeaseResult(len(req.Groups)), allocated, true, nil
	}
	// Each call leases only while every shard's view is under
	// shardLeaseWindow old (by), and the calls go in waves
	// (shards_waves.go): a wave only once the one before landed.
	by := oldest + shardLeaseWindow.Milliseconds()
	if allocated > 0 {
		c.views.took(start)
	}
	sweep := make([]bool, len(c.shards))
	for k, s := range c.shards {
		acks := s.carried.size()
		sweep[k] = s.sweep.pending(now) || (acks >= carryFlushAt && !rota[k]) || acks >= carryFlushMax
	}
	out := newLeaseResult(len(req.Groups))
	out.NextDue = nextDue
	var firstErr error
	ok := false
	post := make([][2][]int64, len(c.shards)) // the views the calls' replies left
	for i, wave := range waves(allocs, sweep) {
		if i > 0 && (late || firstErr != nil || c.now().Sub(peeked) > shardLeaseWindow || passedOver(ws, wave, post)) {
			late = true // what is left waits for the next round
			break
		}
		replies := make([]*LeaseResult, len(wave))
		errs := make([]error, len(wave))
		var wg sync.WaitGroup
		for j, call := range wave {
			s := c.shards[call.k]
			sub := LeaseRequest{Worker: req.Worker, Skip: req.Skip, Groups: slices.Clone(call.a.groups), by: by, view: true}
			for g := range sub.Groups {
				sub.Groups[g].resumed = call.a.resumed[g]
			}
			if len(sub.Groups) == 0 {
				sub.Groups = []LeaseGroup{{}} // a sweep alone: no task
			}
			wg.Go(func() {
				sent := c.now()
				res, _, err := s.lease(ctx, sub, nil)
				replies[j], errs[j] = res, err
				if err == nil && len(res.view) == 2*c.cfg.Levels {
					v := shardView{at: res.at, got: sent}
					v.d, v.ran = c.viewFrom(res.view, 0)
					c.views.keep(call.k, v, true)
					post[call.k] = [2][]int64{v.d, v.ran}
				}
			})
		}
		wg.Wait()
		for j, call := range wave {
			if errs[j] != nil && len(call.a.groups) == 0 {
				// A sweep alone: its shard's peek answered, or the shard
				// would not be due; what failed it (its master just went
				// down) fails the next peek, not this lease.
				continue
			}
			if errs[j] != nil {
				firstErr = cmp.Or(firstErr, errs[j])
				continue
			}
			res := replies[j]
			if res == nil {
				continue
			}
			ok = true
			late = late || (len(call.a.groups) > 0 && res.at > by)
			// The call's groups counted by the request's (call.a.of).
			counts := res.GroupCounts
			res.GroupCounts = make([]int, len(out.GroupCounts))
			for g, n := range counts {
				if g < len(call.a.of) && call.a.of[g] < len(out.GroupCounts) {
					res.GroupCounts[call.a.of[g]] += n
				}
			}
			mergeLease(out, res)
		}
	}
	late = late || c.now().Sub(peeked) > shardLeaseWindow
	if !ok && firstErr != nil {
		return nil, 0, false, firstErr
	}
	return out, allocated, late, nil
}

// reserveShard picks the shard a reservation leases from: the one whose
// highest pending level at req.MinLevel or above (and not skipped) is the
// highest; on a tie one whose head ran before, else the first from a
// random start, and that level. ErrNoTask when none has one. by bounds
// the reservation's call as a lease round's (shardLeaseWindow after the
// oldest view).
func (c *Store) reserveShard(ctx context.Context, req ReserveRequest) (_ *Store, level int, by int64, _ error) {
	if err := c.ready(ctx); err != nil {
		return nil, 0, 0, err
	}
	vs, _, err := c.viewsOf(ctx, 0, nil)
	if err != nil {
		return nil, 0, 0, wrapf(err, "reserve")
	}
	for _, v := range vs {
		if !v.got.IsZero() && (by == 0 || v.at+shardLeaseWindow.Milliseconds() < by) {
			by = v.at + shardLeaseWindow.Milliseconds()
		}
	}
	d, ran := viewMatrix(vs)
	best, bestL := -1, -1
	start := rand.IntN(len(d))
	for i := range d {
		k := (start + i) % len(d)
		for l := c.cfg.Levels - 1; l >= max(req.MinLevel, 0) && l >= bestL; l-- {
			if d[k][l] > 0 && !slices.Contains(req.Skip, l) && !slices.Contains(req.NeverPreempt, l) {
				if l > bestL || (ran[k][l] > 0 && ran[best][l] == 0) {
					best, bestL = k, l
				}
				break
			}
		}
	}
	if best < 0 {
		return nil, 0, 0, ErrNoTask
	}
	return c.shards[best], bestL, by, nil
}
