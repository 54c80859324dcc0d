package queue

import (
	"github.com/overtake/overtake/internal/wire"

	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// finishScript ends leases: ack, retry, dead-letter or requeue, for one
// task or a batch (acks are grouped, see groupCommit). Each op first checks its
// lease token, so a stale holder changes nothing (fencing). Shared keys are
// written once per batch: a batch of acks costs one MGET, one DEL, one ZREM
// per set and one HINCRBY per counter.
//
//	ARGV[1] prefix  ARGV[2] now ms or ""  ARGV[3] retention ms
//	then per op: id, token, mode (ack | retry | dead | requeue), a, b, run spans
//	retry: a = delay ms, b = error; dead: b = reason;
//	requeue: a = "preempted" counts a preemption
//
// A batch of acks without retention comes compact: ARGV[4] "" (no ID is
// empty), then id, token per ack.
//
// Returns one entry per op: 1, "L" (lease lost) or a CORRUPT message.
var finishScript = newScript(luaFastAcks + `
if ARGV[4] == '' then return fast_acks(4, 2, (#ARGV - 4) / 2) end
local ret = tonumber(ARGV[3])
local nops = (#ARGV - 3) / 6
local onlyacks = ret <= 0
for i = 1, nops do if ARGV[3 + 6 * (i - 1) + 3] ~= 'ack' then onlyacks = false end end
if onlyacks then return fast_acks(3, 6, nops) end
local now = clock(ARGV[2])
local g = shared() or guard('scheduled', 'zset')
if not g and ret > 0 then g = guard('done', 'zset') end
if g then return redis.error_reply(g) end
local sk = {}
for i = 1, nops do sk[i] = skey(ARGV[3 + 6 * (i - 1) + 1]) end
local raws = redis.call('MGET', unpack(sk))
local res, lrm, dels, busy, acnt, bands = {}, {}, {}, {}, {}, {}
local ended = {} -- a second op on one lease in a batch: the first ended it
for i = 1, nops do
  local b = 3 + 6 * (i - 1)
  local id, tok, mode, a, reason, rsp = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5], ARGV[b + 6]
  local s = decode(raws[i])
  local lvl = s and s.al
  local lt = 'none'
  if mode == 'requeue' and lvl then lt = typeof(P .. 'p:' .. lvl) end
  if not raws[i] and typeof(sk[i]) ~= 'none' then
    res[i] = 'CORRUPT ' .. sk[i] .. ' is a ' .. typeof(sk[i]) .. ', want a string'
  elseif not s or s.tk ~= tok or ended[id] then
    res[i] = 'L'
  elseif lt ~= 'none' and lt ~= 'list' then
    res[i] = 'CORRUPT ' .. P .. 'p:' .. lvl .. ' is a ' .. lt .. ', want a list'
  else
    res[i] = 1
    ended[id] = true
    lrm[#lrm + 1] = id
    if s.w then busy[s.w] = (busy[s.w] or 0) - 1 end
    if s.w and s.b then bands[s.w .. '|' .. s.b] = (bands[s.w .. '|' .. s.b] or 0) - 1 end
    if lvl then acnt[lvl] = (acnt[lvl] or 0) - 1 end
    local ow, ostt = s.w, s.stt
    s.w, s.tk, s.stt, s.al, s.b = nil, nil, nil, nil, nil
    if mode ~= 'ack' and rsp ~= '' then s.rs = rsp end
    if mode == 'ack' then
      s.st, s.fin = 'done', tostring(now)
      sput(id, s)
      dels[#dels + 1] = ckey(id)
      redis.call('ZADD', P .. 'done', now + ret, id)
    elseif mode == 'retry' then
      local due = now + tonumber(a)
      s.att, s.st, s.err, s.pat, s.sl = tostring(num(s.att) + 1), 'retry', reason, tostring(due), lvl or '0'
      sput(id, s)
      redis.call('ZADD', P .. 'scheduled', due, id)
      redis.call('HINCRBY', P .. 'n', 's' .. (lvl or '0'), 1)
    elseif mode == 'dead' then
      s.att = tostring(num(s.att) + 1)
      to_dead(id, s, lvl or level_of(s, hdr_of(id)), now, reason)
    else
      if a == 'preempted' then
        s.pre = tostring(num(s.pre) + 1)
        feed('gave_way', now, 'id', id, 'l', lvl or '0', 'w', ow or '', 'ran', math.max(now - num(ostt), 0),
          'cps', s.cps or '0')
      end
      if lvl then push_pending(id, s, lvl, now, true) else to_dead(id, s, '0', now, 'malformed record: no level') end
    end
  end
end
if #lrm > 0 then
  redis.call('ZREM', P .. 'leases', unpack(lrm))
  redis.call('ZREM', P .. 'running', unpack(lrm))
  for w, d in pairs(busy) do
    if redis.call('HINCRBY', P .. 'busy', w, d) <= 0 and not redis.call('ZSCORE', P .. 'alive', w) then
      redis.call('HDEL', P .. 'busy', w)
    end
  end
  for f, d in pairs(bands) do
    if redis.call('HINCRBY', P .. 'busy', f, d) <= 0 then redis.call('HDEL', P .. 'busy', f) end
  end
  for l, d in pairs(acnt) do redis.call('HINCRBY', P .. 'n', 'a' .. l, d) end
  if #dels > 0 then redis.call('DEL', unpack(dels)) end
end
if ret > 0 then
  -- With retention, acks expire old done records (the heartbeat does too).
  local old = redis.call('ZRANGEBYSCORE', P .. 'done', '-inf', now, 'LIMIT', 0, 20)
  for _, o in ipairs(old) do
    redis.call('DEL', tkey(o), skey(o), ckey(o))
    redis.call('ZREM', P .. 'done', o)
  end
end
return res
`)

// Ack marks the task done. Its record is deleted, or kept for
// Config.Retention. A stale holder gets ErrLeaseLost. Acks of concurrent
// callers are grouped into one script call (see acker).
func (c engine) Ack(ctx context.Context, t *Task) error {
	if err := checkHeld(t, "ack"); err != nil {
		return err
	}
	return c.acks.do(ctx, finishOp{t: t, mode: "ack"})
}

// Retry records a failed attempt with reason and schedules the task to run
// again at at (see Config.Backoff); at is turned into a delay by the
// client's clock and added to Redis's. A stale holder gets ErrLeaseLost.
func (c engine) Retry(ctx context.Context, t *Task, at time.Time, reason string) error {
	defer c.sweep.at(at)
	return c.finishOne(ctx, finishOp{t: t, mode: "retry", a: max(at.Sub(c.now()), 0).Milliseconds(), b: reason})
}

// DeadLetter dead-letters the task with reason. A stale holder gets
// ErrLeaseLost.
func (c *Client) DeadLetter(ctx context.Context, t *Task, reason string) error {
	return c.finishOne(ctx, finishOp{t: t, mode: "dead", a: 0, b: reason})
}

// Requeue puts a running task back at the HEAD of its level with its
// checkpoint, so it resumes before tasks that waited less. It counts a
// preemption for wire.RequeuePreempted and never a failed attempt.
func (c engine) Requeue(ctx context.Context, t *Task, why wire.RequeueReason) error {
	return c.finishOne(ctx, finishOp{t: t, mode: "requeue", a: string(why)})
}

// finishOp is one transition of a leased task.
type finishOp struct {
	t    *Task
	mode string
	a    any
	b    string
}

func checkHeld(t *Task, mode string) error {
	if t == nil || t.ID == "" || t.Token == "" {
		return fmt.Errorf("%w: %s of a task without ID or token", ErrLeaseLost, mode)
	}
	return nil
}

func (c *Client) finishOne(ctx context.Context, op finishOp) error {
	if err := checkHeld(op.t, op.mode); err != nil {
		return err
	}
	return c.finishBatch(ctx, []finishOp{op})[0]
}

// finishBatch runs ops in one script call and returns one error per op.
func (c *Client) finishBatch(ctx context.Context, ops []finishOp) []error {
	args := make([]any, 0, 4+6*len(ops))
	args = append(args, c.keys.prefix, c.scriptNow(), c.cfg.Retention.Milliseconds())
	if c.cfg.Retention <= 0 && !slices.ContainsFunc(ops, func(op finishOp) bool { return op.mode != "ack" }) {
		args = append(args, "") // compact: id, token per ack
		for _, op := range ops {
			args = append(args, op.t.ID, op.t.Token)
		}
		raw, err := c.runWrite(ctx, finishScript, []string{c.keys.leases()}, args...).Slice()
		return finishResults(ops, raw, err)
	}
	for _, op := range ops {
		a := op.a
		if a == nil {
			a = ""
		}
		args = append(args, op.t.ID, op.t.Token, op.mode, a, op.b, encodeRunSpans(op.t.RunSpans))
	}
	raw, err := c.runWrite(ctx, finishScript, []string{c.keys.leases()}, args...).Slice()
	return finishResults(ops, raw, err)
}

// finishResults maps a finish call's reply (or error) to one error per op.
func finishResults(ops []finishOp, raw []any, err error) []error {
	errs := make([]error, len(ops))
	for i, op := range ops {
		var e error
		switch {
		case err != nil:
			e = scriptErr(err)
		case i >= len(raw):
			e = errors.New("short reply")
		default:
			switch v := raw[i].(type) {
			case int64:
			case string:
				if v == "L" {
					e = ErrLeaseLost
				} else {
					e = scriptErr(errors.New(v))
				}
			}
		}
		if e != nil {
			errs[i] = wrapf(e, "%s %s", op.mode, op.t.ID)
		}
	}
	return errs
}

// ackResults is finishResults for the acks a lease call carried.
func ackResults(acks []*groupWait[finishOp], raw []any, err error) []error {
	ops := make([]finishOp, len(acks))
	for i, w := range acks {
		ops[i] = w.item
	}
	return finishResults(ops, raw, err)
}

// CarryAck queues the ack of t for the next lease call to carry, without
// sending it, so that the caller can count t's slot free for that lease
// before the ack lands: the lease script runs the acks it carries before
// it leases, and nothing else sends a carried ack except FlushCarried.
// wait returns the ack's outcome. ok is false when a lease call carries
// no acks (Config.Retention): then Ack as usual.
func (c engine) CarryAck(t *Task) (wait func(context.Context) error, ok bool) {
	if c.cfg.Retention > 0 || checkHeld(t, "ack") != nil {
		return nil, false
	}
	w := c.carried.queue(finishOp{t: t, mode: "ack"})
	return func(ctx context.Context) error {
		select {
		case err := <-w.done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}, true
}

// FlushCarried sends the acks queued by CarryAck that no lease call took,
// for a caller that will not lease soon (its dispatcher is about to wait,
// or stopped); it returns once they are sent, or once another caller
// sends them.
func (c engine) FlushCarried(ctx context.Context) { c.carried.flushQueued(ctx) }
