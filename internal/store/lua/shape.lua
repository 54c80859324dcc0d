-- shape.lua: records the queue's shape (schema version, level names,
-- classes) when the queue is first opened, and returns the shape the
-- queue holds, the one just written on a new queue (Store.CheckShape; the
-- Go side compares them). The key is never rewritten.
--
-- KEYS[1]  shape (STRING)
-- ARGV[1]  the caller's shape as JSON: {"schema":2,"levels":[...],"classes":{...}}
--
-- Reply: the stored shape's JSON; an error reply CORRUPT ... when the key
-- holds another type.
--
-- Keys it touches. Declared in KEYS: shape. Nothing else.

local t = redis.call('TYPE', KEYS[1])
if type(t) == 'table' then t = t.ok or t['ok'] end
if t == 'none' then
  redis.call('SET', KEYS[1], ARGV[1])
  return ARGV[1]
end
if t ~= 'string' then
  return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is a ' .. t .. ', want a string')
end
return redis.call('GET', KEYS[1])
