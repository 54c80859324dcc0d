package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// enqueueManyScript stores a chunk of new tasks in one call: one TIME, one
// MSETNX of every record (or, when an ID exists, one SET NX per task) and
// one RPUSH per level, so a batch costs a few Redis commands and one
// script run per chunk.
//
//	KEYS[1] any key of the queue (routes the call to its slot)
//	ARGV[1] prefix  ARGV[2] now ms or ""
//	then per task: id, "p" | "s", delay ms, level, preemptible 0/1, body
//
// Returns n when every task was stored (the common case), else one entry
// per task: 1 stored, 0 the ID exists, or a CORRUPT message (nothing of
// that task stored). enqueueReplies reads either.
var enqueueManyScript = redis.NewScript(`
local P = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local nows = tostring(now) -- once, not per task
local function wrong(k, want)
  local t = redis.call('TYPE', k)
  if type(t) == 'table' then t = t.ok end
  if t ~= 'none' and t ~= want then return 'CORRUPT ' .. k .. ' is a ' .. t .. ', want a ' .. want end
end
local n = (#ARGV - 2) / 6
-- push queues the pending tasks (byl: level -> their IDs, in order) with
-- one RPUSH per level, announcing a level whose list was empty (else an
-- earlier announcement is still unanswered). A wrong-typed list refuses
-- the tasks it was to hold: their records go and res names the list (res,
-- all 1s, is made at the first refusal when nil).
local function push(byl, order, res)
  for _, lvl in ipairs(order) do
    local ids, key = byl[lvl], P .. 'p:' .. lvl
    local ok, len = pcall(redis.call, 'RPUSH', key, unpack(ids))
    if not ok then
      local msg = wrong(key, 'list') or ('CORRUPT ' .. key)
      if not res then res = {}; for i = 1, n do res[i] = 1 end end
      for i = 1, n do
        local b = 2 + 6 * (i - 1)
        if res[i] == 1 and ARGV[b + 2] == 'p' and ARGV[b + 4] == lvl then
          redis.call('DEL', P .. 't:' .. ARGV[b + 1])
          res[i] = msg
        end
      end
    elseif len == #ids then
      redis.call('PUBLISH', P .. 'wake', lvl)
    end
  end
  return res
end
local byl, order = {}, {}
-- All pending, IDs distinct (the common case): one MSETNX stores every
-- record, push queues them, and the reply is n (all stored), with no
-- second pass. If one ID exists it stores none, and each goes alone (SET
-- NX) below.
local kv, seen = {}, {}
for i = 1, n do
  local b = 2 + 6 * (i - 1)
  local id, lvl = ARGV[b + 1], ARGV[b + 4]
  if ARGV[b + 2] ~= 'p' or seen[id] then kv = nil; break end
  seen[id] = true
  kv[2 * i - 1] = P .. 't:' .. id
  kv[2 * i] = '2|' .. lvl .. '|' .. ARGV[b + 5] .. '|' .. nows .. '|' .. ARGV[b + 6]
  local l = byl[lvl]
  if not l then l = {}; byl[lvl] = l; order[#order + 1] = lvl end
  l[#l + 1] = id
end
if kv ~= nil and n > 0 and redis.call('MSETNX', unpack(kv)) == 1 then
  return push(byl, order, nil) or n
end
local res = {}
byl, order = {}, {}
for i = 1, n do
  local b = 2 + 6 * (i - 1)
  local id, mode, delay, lvl, prb, body = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5], ARGV[b + 6]
  local bad = mode == 's' and (wrong(P .. 'scheduled', 'zset') or wrong(P .. 'n', 'hash'))
  if bad then
    res[i] = bad
  elseif not redis.call('SET', P .. 't:' .. id, '2|' .. lvl .. '|' .. prb .. '|' .. nows .. '|' .. body, 'NX') then
    res[i] = 0
  elseif mode == 'p' then
    res[i] = 1
    local l = byl[lvl]
    if not l then l = {}; byl[lvl] = l; order[#order + 1] = lvl end
    l[#l + 1] = id
  else
    res[i] = 1
    local due = now + tonumber(delay)
    redis.call('SET', P .. 's:' .. id, cjson.encode({st = 'scheduled', pat = tostring(due), sl = lvl, l = lvl}))
    redis.call('ZADD', P .. 'scheduled', due, id)
    redis.call('HINCRBY', P .. 'n', 's' .. lvl, 1)
    local first = redis.call('ZRANGE', P .. 'scheduled', 0, 0)
    if first[1] == id then redis.call('PUBLISH', P .. 'wake', 's') end
  end
end
return push(byl, order, res)
`)

// enqueueChunk is how many tasks one script call of EnqueueBatch stores.
var enqueueChunk = 256

// EnqueueBatch enqueues tasks with the same options for each, in one
// script call per 256 tasks, all sent in one pipeline. It returns the
// stored tasks in order; a task that failed leaves a nil entry, and the
// returned error joins every failure.
func (c *Client) EnqueueBatch(ctx context.Context, tasks []*Task, opts ...Option) ([]*Task, error) {
	out := make([]*Task, len(tasks))
	spans := make([]trace.Span, len(tasks))
	var errs []error
	type chunk struct {
		idx  []int
		args []any
		cmd  *redis.Cmd
	}
	var chunks []*chunk
	cur := &chunk{}
	for i, t := range tasks {
		nt, _, a, span, err := c.prepare(ctx, t, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("task %d: %w", i, err))
			continue
		}
		out[i], spans[i] = nt, span
		if len(cur.idx) == 0 {
			cur.args = []any{c.keys.prefix, a[3]}
		}
		// a is the single-task script's ARGV: prefix, id, mode, now, delay, level, prb, body.
		cur.idx = append(cur.idx, i)
		cur.args = append(cur.args, a[1], a[2], a[4], a[5], a[6], a[7])
		if len(cur.idx) == enqueueChunk {
			chunks, cur = append(chunks, cur), &chunk{}
		}
	}
	if len(cur.idx) > 0 {
		chunks = append(chunks, cur)
	}
	keys := []string{c.keys.leases()}
	// EVALSHA first; only the chunks that met a server without the script
	// (fresh or restarted Redis) run again, with EVAL: NOSCRIPT means the
	// chunk ran nothing, so no task is sent twice.
	exec := func(only func(ch *chunk) bool, useSha bool) {
		var wait *redis.Cmd // Config.WaitReplicas: WAIT after the chunks sent
		var sent []*chunk
		_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			defer func() { wait = c.waitCmd(ctx, p) }()
			for _, ch := range chunks {
				if !only(ch) {
					continue
				}
				sent = append(sent, ch)
				if useSha {
					ch.cmd = enqueueManyScript.EvalSha(ctx, p, keys, ch.args...)
				} else {
					ch.cmd = enqueueManyScript.Eval(ctx, p, keys, ch.args...)
				}
			}
			return nil
		})
		for _, ch := range sent {
			if err := c.waitResult(wait); err != nil && ch.cmd.Err() == nil {
				ch.cmd.SetErr(err)
			}
		}
	}
	noScript := func(ch *chunk) bool { return redis.HasErrorPrefix(ch.cmd.Err(), "NOSCRIPT") }
	if len(chunks) > 0 {
		exec(func(*chunk) bool { return true }, true)
	}
	if slices.ContainsFunc(chunks, noScript) {
		exec(noScript, false)
	}
	for _, ch := range chunks {
		res, err := enqueueReplies(ch.cmd, len(ch.idx))
		for j, i := range ch.idx {
			var e error
			switch {
			case err != nil:
				e = fmt.Errorf("task %d (%s): %w", i, out[i].ID, scriptErr(err))
			case j >= len(res):
				e = fmt.Errorf("task %d (%s): short reply", i, out[i].ID)
			default:
				switch v := res[j].(type) {
				case int64:
					if v == 0 {
						e = fmt.Errorf("task %d: %w: %q", i, ErrDuplicateTask, out[i].ID)
					}
				case string:
					e = fmt.Errorf("task %d (%s): %w", i, out[i].ID, scriptErr(errors.New(v)))
				}
			}
			endEnqueue(spans[i], e)
			if e != nil {
				errs = append(errs, e)
				out[i] = nil
			}
		}
	}
	return out, errors.Join(errs...)
}

// enqueueReplies reads enqueueManyScript's reply for n tasks: one entry
// per task, 1 for each when the script answered n (all stored).
func enqueueReplies(cmd *redis.Cmd, n int) ([]any, error) {
	if all, err := cmd.Int64(); err == nil {
		if all != int64(n) {
			return nil, fmt.Errorf("overtake: enqueue: reply %d for %d tasks", all, n)
		}
		res := make([]any, n)
		for i := range res {
			res[i] = int64(1)
		}
		return res, nil
	}
	return cmd.Slice()
}
