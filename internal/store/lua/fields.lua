-- fields.lua: the names of the short keys the scripts store: F_<NAME>
-- is the key of a field of a task's state (s:<id>, a JSON object of
-- strings; see prelude.lua), C_<NAME> the letter that, followed by a
-- level, names one of a queue's counters (the n hash). Scripts use these
-- names, never the keys themselves (TestLuaNoBareKeys).
--
-- Generated from stateFields and counterKinds in fields.go by go
-- generate (TestLuaGenerated in fields_test.go): edit those, not this
-- file. The loader (lua.go) writes each constant where a script names it,
-- rather than joining this file:
-- inline: its constants are written where they are named
-- defines: F_STATE F_LEVEL F_ATTEMPT F_PREEMPTIONS F_RECOVERIES
-- defines: F_CHECKPOINT_SEQ F_READY_AT F_AGED_AT F_PROCESS_AT F_ERROR
-- defines: F_FINISHED_AT F_WORKER F_TOKEN F_LEASED_AT F_LEASED_LEVEL
-- defines: F_POOL F_RUN_SPANS F_SCHEDULED_LEVEL F_DEADLINE F_CANCEL
-- defines: C_ACTIVE C_SCHEDULED C_DEAD C_CANCELED

-- luacheck: push no max line length
local F_STATE = 'st' -- what the task is doing: pending, active, scheduled, retry, done, dead or canceled
local F_LEVEL = 'l' -- its current level
local F_ATTEMPT = 'att' -- failed attempts so far
local F_PREEMPTIONS = 'pre' -- times it gave way to a more urgent task
local F_RECOVERIES = 'rec' -- times its lease expired and it was recovered
local F_CHECKPOINT_SEQ = 'cps' -- checkpoints saved so far
local F_READY_AT = 'rdy' -- when it last became pending (none: its enqueue time)
local F_AGED_AT = 'agd' -- when it last aged a level up
local F_PROCESS_AT = 'pat' -- when a scheduled or retrying task is due
local F_ERROR = 'err' -- its last error, or why it was dead-lettered
local F_FINISHED_AT = 'fin' -- when it finished, done or dead
local F_WORKER = 'w' -- the worker holding its lease
local F_TOKEN = 'tk' -- its lease's token
local F_LEASED_AT = 'stt' -- when its lease started
local F_LEASED_LEVEL = 'al' -- the level its lease is counted active at
local F_POOL = 'b' -- the slot pool its lease holds (Heartbeat.Pools)
local F_RUN_SPANS = 'rs' -- its run spans, space-separated (Task.RunSpans)
local F_SCHEDULED_LEVEL = 'sl' -- the level it is counted scheduled at
local F_DEADLINE = 'dl' -- when its lease ends, read when present (the leases set holds it)
local F_CANCEL = 'cx' -- when a cancel of the running task was requested (Store.Cancel)

local C_ACTIVE = 'a' -- tasks leased
local C_SCHEDULED = 's' -- tasks scheduled, or waiting for a retry
local C_DEAD = 'd' -- tasks dead-lettered
local C_CANCELED = 'x' -- tasks canceled
-- luacheck: pop
