-- shape.lua: records the queue's shape (schema version, level names,
-- classes, shards) when the queue is first opened, and returns the shape the
-- queue holds, the one just written on a new queue (Store.CheckShape; the
-- Go side compares them). The schema and levels are never rewritten; a
-- caller's class the stored shape lacks is added to it (the only rewrite),
-- unless another of the caller's classes maps to a level other than the
-- stored one, which changes nothing (the Go side refuses the caller).
--
-- KEYS[1]  shape (STRING)
-- ARGV[1]  the caller's shape as JSON: {"schema":2,"levels":[...],"classes":{...},"shards":K}
--
-- Reply: {the stored shape's JSON after any merge, 1 when it admits the
-- caller's (same schema, levels and shards, no class mapped elsewhere) else 0};
-- an error reply CORRUPT ... when the key holds another type. A value
-- that is not a shape is returned as it is, with 0 (the Go side reports
-- it). Deciding here keeps a JSON decoder out of a producer's binary.
--
-- Keys it touches. Declared in KEYS: shape. Nothing else.

local t = redis.call('TYPE', KEYS[1])
if type(t) == 'table' then t = t.ok or t['ok'] end
if t == 'none' then
  redis.call('SET', KEYS[1], ARGV[1])
  return {ARGV[1], 1}
end
if t ~= 'string' then
  return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is a ' .. t .. ', want a string')
end
local raw = redis.call('GET', KEYS[1])
if raw == ARGV[1] then return {raw, 1} end
local ok, stored = pcall(cjson.decode, raw)
local mine = cjson.decode(ARGV[1])
if not ok or type(stored) ~= 'table' or type(stored.levels) ~= 'table' or stored.schema ~= mine.schema then return {raw, 0} end
if #stored.levels ~= #mine.levels then return {raw, 0} end
if (tonumber(stored.shards) or 1) ~= (tonumber(mine.shards) or 1) then return {raw, 0} end
for i, name in ipairs(mine.levels) do
  if stored.levels[i] ~= name then return {raw, 0} end
end
local have = type(stored.classes) == 'table' and stored.classes or {}
local added = false
for name, lvl in pairs(type(mine.classes) == 'table' and mine.classes or {}) do
  if have[name] == nil then
    have[name] = lvl
    added = true
  elseif have[name] ~= lvl then
    return {raw, 0}
  end
end
if not added then return {raw, 1} end
-- Written as Go's json.Marshal writes a Shape: fields in order, classes
-- sorted by name.
local names = {}
for name in pairs(have) do names[#names + 1] = name end
table.sort(names)
local cls = {}
for i, name in ipairs(names) do cls[i] = cjson.encode(name) .. ':' .. string.format('%d', have[name]) end
local merged = '{"schema":' .. string.format('%d', stored.schema) .. ',"levels":' .. cjson.encode(stored.levels) ..
  ',"classes":{' .. table.concat(cls, ',') .. '}'
if (tonumber(stored.shards) or 1) > 1 then merged = merged .. ',"shards":' .. string.format('%d', stored.shards) end
merged = merged .. '}'
redis.call('SET', KEYS[1], merged)
return {merged, 1}
