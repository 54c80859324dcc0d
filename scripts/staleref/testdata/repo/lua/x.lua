-- calls real_fn(), then gone_fn()
local function real_fn() end
--[[ a block comment:
  missing.lua ]]
return real_fn()
