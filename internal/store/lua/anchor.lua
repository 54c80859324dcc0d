-- anchor.lua: the anchor of the lease sets (see anchorMember in anchor.go,
-- which says why it exists): a member that is no task, kept in leases and
-- running at ANCHOR_SCORE, above every deadline and level, so that the
-- sets stay skiplists. A range read bounded by BELOW_ANCHOR never sees it.
-- TestLuaConstants checks that these values are anchor.go's.
-- defines: ANCHOR ANCHOR_SCORE BELOW_ANCHOR

-- luacheck: push no max line length
local ANCHOR, ANCHOR_SCORE, BELOW_ANCHOR = "~ overtake anchor: not a task; keeps this sorted set a skiplist, cheaper to update ~", "10000000000000", "(10000000000000"
-- luacheck: pop
