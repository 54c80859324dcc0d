package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/overtake/overtake/internal/testredis"
)

// keyGuard runs before a script's own code: it shadows redis with one
// whose call and pcall note every key a command names that the call's
// KEYS lack (the key positions of the commands the enqueue scripts send),
// and the script runs as a function, so that a noted key fails the call
// with UNDECLARED even where the script catches the command's error.
const keyGuard = `
local declared, undeclared = {}, {}
for _, k in ipairs(KEYS) do declared[k] = true end
local real = redis
local function check(cmd, ...)
  local a, ks = {...}, {}
  cmd = string.upper(cmd)
  if cmd == 'DEL' or cmd == 'EXISTS' then ks = a
  elseif cmd == 'MSETNX' then for i = 1, #a, 2 do ks[#ks + 1] = a[i] end
  elseif cmd ~= 'TIME' and cmd ~= 'PUBLISH' then ks = {a[1]} end
  for _, k in ipairs(ks) do
    if not declared[k] then undeclared[#undeclared + 1] = cmd .. ' ' .. tostring(k) end
  end
end
local redis = setmetatable({
  call = function(...) check(...); return real.call(...) end,
  pcall = function(...) check(...); return real.pcall(...) end,
}, {__index = real})
local function script()
`

const keyGuardEnd = `
end
local r = script()
if #undeclared > 0 then return real.error_reply('UNDECLARED ' .. table.concat(undeclared, ', ')) end
return r
`

// guarded returns lua/name wrapped in keyGuard.
func guarded(name string) string { return keyGuard + luaSource(name) + keyGuardEnd }

// The enqueue scripts touch only the keys their calls declare, on every
// path: pending or scheduled, a generated or the caller's ID (res:<id>),
// unique, periodic, refused as a duplicate, a taken lock or tick, a
// wrong-typed list. A pending task declares neither s:<id> nor n, nor a
// batch without a scheduled task scheduled and n (they cost the client a
// key each): this is what keeps that safe for Redis Cluster.
func TestEnqueueTouchesOnlyDeclaredKeys(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		single, batch, pending := guarded("enqueue.lua"), guarded("enqueue_batch.lua"), guarded("enqueue_pending.lua")
		// prep prepares a task of ID id (generated when ""); the payload of
		// an ID "u<x><n>" is "u<x>", so that its lock is that of every
		// "u<x>..." task.
		prep := func(id string, opts ...Option) *enqWait {
			p := id
			if len(id) > 2 && id[0] == 'u' {
				p = id[:2]
			}
			w, err := e.c.prepare(e.ctx, &Task{Info: Info{ID: id, Type: "t", Payload: []byte(p)}}, opts)
			require.NoError(t, err)
			return w
		}
		runOne := func(w *enqWait) (any, error) {
			ks, args := e.c.enqueueCall(w)
			r, err := e.rdb.Eval(e.ctx, single, ks, args...).Result()
			return r, scriptErr(err)
		}
		runMany := func(ws ...*enqWait) (any, error) {
			call := e.c.newBatchCall(ws[0].now, len(ws))
			for _, w := range ws {
				call.add(e.c, w)
			}
			r, err := e.rdb.Eval(e.ctx, batch, call.close(e.c), call.args...).Result()
			return r, scriptErr(err)
		}
		// runPending runs enqueue_pending.lua's call of ws (pending, IDs
		// made here), its reply in the call's order.
		runPending := func(ws ...*enqWait) (any, error) {
			call, _ := e.c.chunkCall(ws[0].now, len(ws), func(i int) *enqWait { return ws[i] })
			require.Same(t, enqueuePendingScript, call.script)
			r, err := e.rdb.Eval(e.ctx, pending, call.keys, call.args...).Result()
			return r, scriptErr(err)
		}
		at := e.clk.Now().Add(time.Hour)
		dupTick := prep("", Tick("dup", "@every 1h", at)) // its ID is stored before it
		for _, tc := range []struct {
			name string
			w    *enqWait
			want int64
		}{
			{"pending, generated ID", prep("", Level(1)), 1},
			{"pending, caller's ID", prep("a", Level(2)), 1},
			{"pending, the ID exists", prep("a", Level(2)), 0},
			{"scheduled, generated ID", prep("", ProcessIn(time.Minute)), 1},
			{"scheduled, caller's ID", prep("s1", ProcessIn(time.Minute)), 1},
			{"unique", prep("ua1", Unique(time.Minute)), 1},
			{"unique, lock taken", prep("ua2", Unique(time.Minute)), 2},
			{"unique, scheduled", prep("ub1", Unique(time.Minute), ProcessIn(time.Hour), Level(1)), 1},
			{"tick", prep("", Tick("sch", "@every 1h", at)), 1},
			{"tick taken", prep("", Tick("sch", "@every 1h", at)), 3},
			{"a task with a tick's ID", prep(dupTick.nt.ID), 1},
			{"tick, ID exists", dupTick, 0},
			{"unique tick, scheduled", prep("uc", Unique(time.Minute), Tick("sch2", "@every 1h", at),
				ProcessIn(time.Minute)), 1},
		} {
			got, err := runOne(tc.w)
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, got, tc.name)
		}
		// All pending and new (one MSETNX), then a mix down the one-by-one
		// path: scheduled, unique, a taken lock, an existing ID, a reused one.
		got, err := runMany(prep("", Level(0)), prep("", Level(2)), prep("b", Level(1)), prep("", Level(1)))
		require.NoError(t, err)
		require.Equal(t, int64(4), got)
		got, err = runMany(prep("", ProcessIn(time.Minute)), prep("c", Level(1)), prep("ud1", Unique(time.Minute)),
			prep("ud2", Unique(time.Minute)), prep("a"), prep("s2", ProcessIn(time.Hour), Level(2)))
		require.NoError(t, err)
		require.Equal(t, []any{int64(1), int64(1), int64(1), int64(2), int64(0), int64(1)}, got)

		// enqueue_pending.lua: all stored (one MSETNX), then an ID that
		// exists (one by one).
		got, err = runPending(prep("", Level(2)), prep("", Level(0)), prep("", Level(2)))
		require.NoError(t, err)
		require.Equal(t, int64(3), got)
		taken := prep("", Level(1))
		require.NoError(t, e.rdb.Set(e.ctx, e.c.keys.task(taken.nt.ID), "x", 0).Err())
		got, err = runPending(prep("", Level(1)), taken)
		require.NoError(t, err)
		require.Equal(t, []any{int64(1), int64(0)}, got)

		// A wrong-typed list: the stored record and lock are deleted again.
		e.plant(e.c.keys.pending(0), "hash")
		got, err = runPending(prep("", Level(0)), prep("", Level(1)))
		require.NoError(t, err)
		require.Contains(t, got.([]any)[0], "CORRUPT")
		require.Equal(t, int64(1), got.([]any)[1])
		_, err = runOne(prep("ue1", Unique(time.Hour), Level(0)))
		requireCorrupt(t, err, e.c.keys.pending(0))
		got, err = runMany(prep("y", Level(0)), prep("ue2", Unique(time.Hour), Level(0)), prep("", Level(1)))
		require.NoError(t, err)
		require.Len(t, got, 3)
		require.Contains(t, got.([]any)[0], "CORRUPT")
		require.Contains(t, got.([]any)[1], "CORRUPT")
		require.Equal(t, int64(1), got.([]any)[2])
		e.plant(e.c.keys.scheduled(), "list")
		_, err = runOne(prep("", ProcessIn(time.Minute)))
		requireCorrupt(t, err, e.c.keys.scheduled())
		got, err = runMany(prep("", ProcessIn(time.Minute)), prep("", Level(1)))
		require.NoError(t, err)
		require.Contains(t, got.([]any)[0], "CORRUPT")
	})
}

// prepare and the building of a script call allocate what they must and
// no more: a grouped call of 4 pending tasks cost 103 allocations before
// the calls were built from enqWait (keys and ARGV of the single-task
// script built per task, then copied; s:<id> and n declared for pending
// tasks; the fixed keys concatenated per call).
func TestEnqueueCallAllocs(t *testing.T) {
	e := newEnv(t, testredis.Mini(t), nil)
	opts := []Option{Level(1)}
	task := NewTask("t", []byte("p"))
	n := testing.AllocsPerRun(200, func() {
		if _, err := e.c.prepare(e.ctx, task, opts); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("prepare %v", n)
	require.LessOrEqual(t, n, 5.0+raceAllocs, "prepare (6 while Inject made an empty map per task)")
	ws := make([]*enqWait, 4)
	for i := range ws {
		w, err := e.c.prepare(e.ctx, task, []Option{Level(i % 3)})
		require.NoError(t, err)
		ws[i] = w
	}
	n = testing.AllocsPerRun(200, func() {
		call := e.c.newBatchCall(ws[0].now, len(ws))
		for _, w := range ws {
			call.add(e.c, w)
		}
		_ = call.close(e.c)
	})
	t.Logf("batch %v", n)
	require.LessOrEqual(t, n, 7.0, "a batch call of 4: its two slices, now and a t:<id> a task")
	n = testing.AllocsPerRun(200, func() { _, _ = e.c.enqueueCall(ws[0]) })
	t.Logf("single %v", n)
	require.LessOrEqual(t, n, 4.0, "the single-task call: two slices, t:<id> and now")
}

// A queue given otel's no-op tracer provider (or whose global is it)
// prepares an Enqueue as cheaply as one on the default provider with
// none registered: its span would record nothing, so none is started
// (telemetry.Silent). Before, 16 allocations against 5.
func TestEnqueueNoopProviderAllocs(t *testing.T) {
	e := newEnv(t, testredis.Mini(t), func(c *Config) { c.TracerProvider = noop.NewTracerProvider() })
	opts := []Option{Level(1)}
	task := NewTask("t", []byte("p"))
	n := testing.AllocsPerRun(200, func() {
		if _, err := e.c.prepare(e.ctx, task, opts); err != nil {
			t.Fatal(err)
		}
	})
	require.LessOrEqual(t, n, 5.0+raceAllocs, "prepare with a no-op provider")
}
