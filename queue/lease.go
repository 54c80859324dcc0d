package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// leaseScript promotes due scheduled tasks, recovers expired leases, ages
// long-waiting tasks up a level (Config.AgeAfter), then leases up to Count
// tasks, highest level first, FIFO within a level. With
// reserve set it first checks the fleet, for preemption (see Reserve).
//
//	KEYS[1] leases (routes the call to the queue's slot)
//	ARGV[1] prefix  ARGV[2] now ms  ARGV[3] lease deadline ms  ARGV[4] worker
//	ARGV[5] count   ARGV[6] min level  ARGV[7] max level  ARGV[8] token base
//	ARGV[9] "1" to reserve  ARGV[10] victim id  ARGV[11] victim level
//	ARGV[12] min run ms  ARGV[13] max preemptions (-1: no limit)
//	ARGV[14] never-preempted levels as ",l1,l2,"
//	ARGV[15] levels not to reserve (they never preempt) as ",l1,l2,"
//	ARGV[16] age after ms (Config.AgeAfter; 0: no aging)
//	ARGV[17] "1" to skip the fleet checks of a reservation (IgnoreFleet)
//
// Returns {next due ms or 0, record...} where each record is HGETALL's list,
// or {-1} / {-2} when a reservation is refused (free slot / lower victim
// elsewhere).
var leaseScript = newScript(`
local now, dl, w = tonumber(ARGV[2]), ARGV[3], ARGV[4]
local count, minl, maxl, tok = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
promote(now, maxl)
recover(now)
age(now, tonumber(ARGV[16]), tonumber(ARGV[7]))
if ARGV[9] == '1' and ARGV[17] ~= '1' then
  local vlvl = tonumber(ARGV[11])
  local live = redis.call('ZRANGEBYSCORE', P .. 'alive', now, '+inf')
  for _, o in ipairs(live) do
    if o ~= w then
      local cap = tonumber(redis.call('HGET', P .. 'cap', o) or '0')
      local busy = tonumber(redis.call('HGET', P .. 'busy', o) or '0')
      if cap - busy > 0 then return {-1} end
    end
  end
  local minrun, maxpre, never = tonumber(ARGV[12]), tonumber(ARGV[13]), ARGV[14]
  local lower = redis.call('ZRANGEBYSCORE', P .. 'running', '-inf', '(' .. vlvl, 'WITHSCORES', 'LIMIT', 0, 50)
  for i = 1, #lower, 2 do
    local id, lvl = lower[i], lower[i + 1]
    local ow, stt, pre = unpack(redis.call('HMGET', tkey(id), 'wkr', 'stt', 'pre'))
    local live = ow and tonumber(redis.call('ZSCORE', P .. 'alive', ow) or '0') >= now
    if ow ~= w and live and not string.find(never, ',' .. lvl .. ',', 1, true)
      and (tonumber(stt or '') or 0) + minrun <= now
      and (maxpre < 0 or (tonumber(pre or '0') or 0) < maxpre) then
      return {-2}
    end
  end
end
local out = {0}
local n = 0
local skip = ARGV[15] or ','
for lvl = maxl, minl, -1 do
  while n < count and not string.find(skip, ',' .. lvl .. ',', 1, true) do
    local id = redis.call('LPOP', P .. 'p:' .. lvl)
    if not id then break end
    local h = tkey(id)
    if redis.call('EXISTS', h) == 1 then
      n = n + 1
      acquire(id, h, lvl, now, dl, tok .. '.' .. n, w)
      out[#out + 1] = redis.call('HGETALL', h)
    end
  end
  if n >= count then break end
end
if n > 0 and ARGV[9] == '1' then
  redis.call('ZREM', P .. 'running', ARGV[10])
end
if n == 0 then
  local s = redis.call('ZRANGE', P .. 'scheduled', 0, 0, 'WITHSCORES')
  local l = redis.call('ZRANGE', P .. 'leases', 0, 0, 'WITHSCORES')
  local due = 0
  if s[2] then due = tonumber(s[2]) end
  if l[2] and (due == 0 or tonumber(l[2]) < due) then due = tonumber(l[2]) end
  out[1] = due
end
return out
`)

// LeaseRequest asks for up to Count tasks for Worker.
type LeaseRequest struct {
	// Worker is the ID of the leasing worker (see Heartbeat).
	Worker string
	// Count is how many tasks to lease at most. Defaults to 1.
	Count int
	// MinLevel leases only tasks at this level or above.
	MinLevel int
}

// LeaseResult is what one lease call got.
type LeaseResult struct {
	// Tasks are the leased tasks, highest level first.
	Tasks []*Task
	// Malformed are leased records that could not be decoded; each holds
	// the ID and token it could read and an error wrapping
	// ErrMalformedRecord. The caller dead-letters them (Kill).
	Malformed []MalformedTask
	// NextDue is when the earliest scheduled task becomes due or the
	// earliest lease expires, zero if none: an idle worker need not look
	// again before then unless woken.
	NextDue time.Time
}

// MalformedTask is a leased record that could not be decoded.
type MalformedTask struct {
	Task *Task
	Err  error
}

// Lease promotes due scheduled tasks, recovers expired leases and leases up
// to req.Count pending tasks, highest level first, FIFO within a level, in
// one round trip. Each leased task gets a fresh token and a deadline of
// now + LeaseDuration.
func (c *Client) Lease(ctx context.Context, req LeaseRequest) (*LeaseResult, error) {
	res, _, err := c.lease(ctx, req, nil)
	return res, err
}

// ReserveRequest asks to lease one urgent task for a saturated worker that
// will preempt Victim, its lowest preemptible running task, if it gets one.
type ReserveRequest struct {
	Worker string
	// VictimID and VictimLevel name the task the caller will preempt.
	VictimID    string
	VictimLevel int
	// MinLevel is the lowest level worth preempting for (VictimLevel+1 or
	// more).
	MinLevel int
	// MinRunTime, MaxPreemptions and NeverPreempted mirror the preemption
	// policy, so the script judges other workers' tasks as the caller
	// judges its own. MaxPreemptions < 0 means no limit.
	MinRunTime     time.Duration
	MaxPreemptions int
	NeverPreempted []int
	// NeverPreempt lists arriving levels that never preempt; they are not
	// reserved.
	NeverPreempt []int
	// IgnoreFleet skips the fleet checks (a free slot or a lower victim on
	// another worker): the caller deferred to the fleet long enough (see
	// preempt.Policy) and preempts its own victim anyway. The victim still
	// leaves the fleet's running set, and a task is still taken before
	// anything is preempted.
	IgnoreFleet bool
}

// Reserve leases one task at req.MinLevel or above, for preemption, only if
// no other live worker in the fleet has a free slot (else
// ErrFreeSlotInFleet) and no other live worker runs an eligible preemptible
// task below req.VictimLevel (else ErrLowerVictimElsewhere); a crashed
// worker's tasks do not count, they wait for recovery. On success the
// victim leaves the fleet's running set, so no other worker picks it too.
// It returns ErrNoTask when nothing qualifies.
func (c *Client) Reserve(ctx context.Context, req ReserveRequest) (*Task, *LeaseResult, error) {
	res, _, err := c.lease(ctx, LeaseRequest{Worker: req.Worker, Count: 1, MinLevel: req.MinLevel}, &req)
	if err != nil {
		return nil, res, err
	}
	if len(res.Tasks) == 0 {
		return nil, res, ErrNoTask
	}
	return res.Tasks[0], res, nil
}

func (c *Client) lease(ctx context.Context, req LeaseRequest, rv *ReserveRequest) (*LeaseResult, int, error) {
	if req.Worker == "" {
		return nil, 0, errors.New("overtake: lease: empty worker ID")
	}
	if req.Count < 1 {
		req.Count = 1
	}
	minLevel := max(req.MinLevel, 0)
	if minLevel >= c.cfg.Levels {
		return &LeaseResult{}, 0, nil
	}
	now := c.cfg.Clock()
	args := []any{c.keys.prefix, now.UnixMilli(), now.Add(c.cfg.LeaseDuration).UnixMilli(), req.Worker,
		req.Count, minLevel, c.cfg.Levels - 1, NewToken()}
	if rv != nil {
		args = append(args, "1", rv.VictimID, rv.VictimLevel, rv.MinRunTime.Milliseconds(), rv.MaxPreemptions,
			levelSet(rv.NeverPreempted), levelSet(rv.NeverPreempt))
	} else {
		args = append(args, "0", "", 0, 0, -1, ",", ",")
	}
	ignore := "0"
	if rv != nil && rv.IgnoreFleet {
		ignore = "1"
	}
	args = append(args, c.cfg.AgeAfter.Milliseconds(), ignore)
	raw, err := leaseScript.Run(ctx, c.rdb, []string{c.keys.leases()}, args...).Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("overtake: lease: %w", err)
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
	res := &LeaseResult{}
	if head > 0 {
		res.NextDue = time.UnixMilli(head)
	}
	for _, r := range raw[1:] {
		flat, _ := r.([]any)
		t, err := decodeRecord(flat)
		if err != nil {
			res.Malformed = append(res.Malformed, MalformedTask{Task: t, Err: err})
			continue
		}
		res.Tasks = append(res.Tasks, t)
	}
	return res, len(raw) - 1, nil
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
//	KEYS[1] task record  ARGV[1] prefix  ARGV[2] id  ARGV[3] token
//
// Returns 1 if the task is in the running set again, else 0.
var rejoinScript = newScript(`
if not check_token(KEYS[1], ARGV[3]) then return 0 end
local prb, alv = unpack(redis.call('HMGET', KEYS[1], 'prb', 'alv'))
if prb == '0' or not alv then return 0 end
redis.call('ZADD', P .. 'running', alv, ARGV[2])
return 1
`)

// Rejoin returns t, a task the caller runs, to the fleet's view of running
// preemptible tasks after a Reserve named it as the victim but the caller
// did not preempt it (a slot freed meanwhile, or the reserved record was
// malformed), so other workers see it again when they look for the lowest
// victim. A stale holder changes nothing.
func (c *Client) Rejoin(ctx context.Context, t *Task) error {
	err := rejoinScript.Run(ctx, c.rdb, []string{c.keys.task(t.ID)}, c.keys.prefix, t.ID, t.Token).Err()
	if err != nil {
		return fmt.Errorf("overtake: rejoin %s: %w", t.ID, err)
	}
	return nil
}
