package store

//go:generate go test -run ^TestLuaGenerated$ -update .

// The names of what the scripts store in short keys, defined once here:
// the fields of a task's state and the kinds of a queue's counters. The
// scripts read them as constants from lua/fields.lua, generated from these
// tables (go generate; TestLuaGenerated fails when the file is stale), and
// TestStateFields checks that the state type and its parser (record.go,
// state_parse.go) know exactly these keys. The keys themselves stay as
// short as they are: they are what existing queues hold.

// luaName is one name the scripts use for a short key: F_<Name> for a
// state field, C_<Name> for a counter, in lua/fields.lua.
type luaName struct {
	// Name is the constant's name after its prefix, in capitals.
	Name string
	// Key is what Redis holds.
	Key string
	// Meaning says what the value is (the comment in lua/fields.lua).
	Meaning string
}

// stateFields are the fields of a task's state, the s:<id> key: a flat
// JSON object of strings (see lua/prelude.lua). Times are ms since the
// epoch on Redis's clock, levels and counts decimal strings.
var stateFields = []luaName{
	{"STATE", "st", "what the task is doing: pending, active, scheduled, retry, done, dead or canceled"},
	{"LEVEL", "l", "its current level"},
	{"ATTEMPT", "att", "failed attempts so far"},
	{"PREEMPTIONS", "pre", "times it gave way to a more urgent task"},
	{"RECOVERIES", "rec", "times its lease expired and it was recovered"},
	{"CHECKPOINT_SEQ", "cps", "checkpoints saved so far"},
	{"READY_AT", "rdy", "when it last became pending (none: its enqueue time)"},
	{"AGED_AT", "agd", "when it last aged a level up"},
	{"PROCESS_AT", "pat", "when a scheduled or retrying task is due"},
	{"ERROR", "err", "its last error, or why it was dead-lettered"},
	{"FINISHED_AT", "fin", "when it finished, done or dead"},
	{"WORKER", "w", "the worker holding its lease"},
	{"TOKEN", "tk", "its lease's token"},
	{"LEASED_AT", "stt", "when its lease started"},
	{"LEASED_LEVEL", "al", "the level its lease is counted active at"},
	{"POOL", "b", "the slot pool its lease holds (Heartbeat.Pools)"},
	{"RUN_SPANS", "rs", "its run spans, space-separated (Task.RunSpans)"},
	{"SCHEDULED_LEVEL", "sl", "the level it is counted scheduled at"},
	{"DEADLINE", "dl", "when its lease ends, read when present (the leases set holds it)"},
	{"CANCEL", "cx", "when a cancel of the running task was requested (Store.Cancel)"},
}

// counterKinds are a queue's counters per level, the fields <key><level>
// of its n hash, which Stats reads (lua/stats.lua).
var counterKinds = []luaName{
	{"ACTIVE", "a", "tasks leased"},
	{"SCHEDULED", "s", "tasks scheduled, or waiting for a retry"},
	{"DEAD", "d", "tasks dead-lettered"},
	{"CANCELED", "x", "tasks canceled"},
}
