-- luacheck configuration: the Redis scripts under internal/store/lua
-- (make lint runs `luacheck internal/store/lua`).
--
-- Scripts run in Redis's Lua 5.1 with its globals. A script file is
-- assembled at load time after the helper files its "-- uses:" line names
-- (see lua.go), so the top-level locals those files define (their
-- "-- defines:" lines) are in scope there: each file is checked on its own
-- with them as read-only globals, and a helper file's own definitions are
-- not reported as unused (scripts use them). TestLuaHeaders checks that a
-- "-- defines:" line lists exactly the file's top-level locals.
std = "lua51"
read_globals = {"redis", "cjson", "cmsgpack", "bit", "struct", "KEYS", "ARGV"}
max_line_length = 140

local dir = "internal/store/lua/"
-- Where this file is, relative to where luacheck runs (it looks for it
-- there and in the directories above).
local root = ""
for _ = 1, 20 do
  local f = io.open(root .. ".luacheckrc")
  if f then f:close(); break end
  root = "../" .. root
end

local function header(name, key)
  local out = {}
  local f = io.open(root .. dir .. name)
  if not f then return out end
  for line in f:lines() do
    if not line:match("^%-%-") and line ~= "" then break end
    local rest = line:match("^%-%- " .. key .. ":(.*)$")
    if rest then
      for w in rest:gmatch("%S+") do out[#out + 1] = w end
    end
  end
  f:close()
  return out
end

local lfs = require("lfs")
for name in lfs.dir(root .. dir) do
  if name:match("%.lua$") then
    local globals, ignore = {}, {}
    for _, used in ipairs(header(name, "uses")) do
      for _, def in ipairs(header(used, "defines")) do globals[#globals + 1] = def end
    end
    for _, def in ipairs(header(name, "defines")) do ignore[#ignore + 1] = "211/" .. def end
    files[dir .. name] = {read_globals = globals, ignore = ignore}
  end
end
