package store

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

var updateLua = flag.Bool("update", false, "rewrite the generated files under lua/ (go generate)")

// generatedLua are the files under lua/ written from Go tables, and how.
var generatedLua = map[string]func() string{
	"fields.lua":  luaFieldsFile,
	"buckets.lua": luaBucketsFile,
}

// luaConstants writes one "local <prefix><Name> = '<Key>' -- <Meaning>"
// line per name.
func luaConstants(b *strings.Builder, prefix string, names []luaName) {
	for _, n := range names {
		fmt.Fprintf(b, "local %s%s = '%s' -- %s\n", prefix, n.Name, n.Key, n.Meaning)
	}
}

// luaDefines writes the "-- defines:" lines of names, wrapped.
func luaDefines(b *strings.Builder, names []string) {
	line := "-- defines:"
	for _, n := range names {
		if len(line)+1+len(n) > 72 {
			b.WriteString(line + "\n")
			line = "-- defines:"
		}
		line += " " + n
	}
	b.WriteString(line + "\n")
}

// luaFieldsFile is lua/fields.lua, from stateFields and counterKinds.
func luaFieldsFile() string {
	var b strings.Builder
	b.WriteString(`-- fields.lua: the names of the short keys the scripts store: F_<NAME>
-- is the key of a field of a task's state (s:<id>, a JSON object of
-- strings; see prelude.lua), C_<NAME> the letter that, followed by a
-- level, names one of a queue's counters (the n hash). Scripts use these
-- names, never the keys themselves (TestLuaNoBareKeys).
--
-- Generated from stateFields and counterKinds in fields.go by go
-- generate (TestLuaGenerated in fields_test.go): edit those, not this
-- file. The loader (lua.go) writes each constant where a script names it,
-- rather than joining this file:
` + inlineMark + `
`)
	var names []string
	for _, f := range stateFields {
		names = append(names, "F_"+f.Name)
	}
	for _, c := range counterKinds {
		names = append(names, "C_"+c.Name)
	}
	luaDefines(&b, names)
	b.WriteString("\n-- luacheck: push no max line length\n")
	luaConstants(&b, "F_", stateFields)
	b.WriteString("\n")
	luaConstants(&b, "C_", counterKinds)
	b.WriteString("-- luacheck: pop\n")
	return b.String()
}

// luaBucketsFile is lua/buckets.lua, from the rate constants and
// rateKinds in rates.go.
func luaBucketsFile() string {
	var b strings.Builder
	b.WriteString(`-- buckets.lua: the rate buckets of counts.lua and rates.lua (see
-- rateBucket, rateBuckets and rateKeep in rates.go, which say how rates
-- are counted).
--
-- Generated from those values and rateKinds in rates.go by go generate
-- (TestLuaGenerated in fields_test.go): edit those, not this file.
-- defines: RATE_BUCKET_MS RATE_BUCKETS RATE_KEEP_MS RATE_KINDS
--
-- The counters live in one HASH per bucket of Redis's clock, r:<bucket>
-- (bucket = floor(ms / RATE_BUCKET_MS)), fields <level or P<pool>><kind>,
-- kind one of RATE_KINDS, in the order of a heartbeat's counts.

`)
	fmt.Fprintf(&b, "local RATE_BUCKET_MS, RATE_BUCKETS, RATE_KEEP_MS = %d, %d, %d\n",
		rateBucket.Milliseconds(), rateBuckets, rateKeep.Milliseconds())
	b.WriteString("local RATE_KINDS = {")
	for i, k := range rateKinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "'%c'", k.key)
	}
	b.WriteString("} -- ")
	for i, k := range rateKinds {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k.name)
	}
	b.WriteString("\n")
	return b.String()
}

// The generated files under lua/ are what their Go tables make them; run
// go generate ./internal/store after changing a table.
func TestLuaGenerated(t *testing.T) {
	for name, gen := range generatedLua {
		want := gen()
		if *updateLua {
			require.NoError(t, os.WriteFile("lua/"+name, []byte(want), 0o644))
			continue
		}
		require.Equal(t, want, luaFile(name),
			"lua/%s is stale: run go generate ./internal/store", name)
	}
}

// The state type and its parser know exactly the keys of stateFields:
// each key is one field's JSON tag, and parseState's hand-written path
// fills the same field as encoding/json.
func TestStateFields(t *testing.T) {
	tags := map[string]string{} // JSON key -> Go field
	st := reflect.TypeFor[state]()
	for i := range st.NumField() {
		f := st.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		tags[key] = f.Name
	}
	var keys []string
	obj := map[string]string{}
	for i, f := range stateFields {
		require.Contains(t, tags, f.Key, "stateFields' %s has no field in state (record.go)", f.Key)
		keys = append(keys, f.Key)
		obj[f.Key] = fmt.Sprint("v", i)
		var s state
		require.True(t, s.set(f.Key, "x"), "state.set (state_parse.go) knows %q", f.Key)
		require.Equal(t, "x", reflect.ValueOf(s).FieldByName(tags[f.Key]).String(),
			"state.set(%q) fills %s", f.Key, tags[f.Key])
	}
	for key, name := range tags {
		require.Contains(t, keys, key, "state.%s (json %q) is not in stateFields (fields.go)", name, key)
	}
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	var fast, slow state
	require.NoError(t, parseState(string(raw), &fast))
	require.NoError(t, json.Unmarshal(raw, &slow))
	require.Equal(t, slow, fast)
	for i, f := range stateFields {
		require.Equal(t, fmt.Sprint("v", i), reflect.ValueOf(fast).FieldByName(tags[f.Key]).String(), f.Key)
	}
	seen := map[string]bool{}
	for _, n := range append(append([]luaName{}, stateFields...), counterKinds...) {
		require.NotEmpty(t, n.Meaning, n.Name)
		require.Regexp(t, `^[A-Z][A-Z_]*$`, n.Name)
		require.False(t, seen[n.Name], "%s named twice", n.Name)
		seen[n.Name] = true
	}
	letters := map[string]bool{}
	for _, c := range counterKinds {
		require.Len(t, c.Key, 1, "a counter kind is one letter (stats reads <letter><level>)")
		require.False(t, letters[c.Key], "counter letter %q twice", c.Key)
		letters[c.Key] = true
	}
}

// luaKeyAllowed are field accesses of a name that is also a state key
// that are no task state: an error reply's err.
var luaKeyAllowed = map[string]bool{"acked.err": true}

// No script spells a state key or a counter letter itself: it uses the
// names of lua/fields.lua (F_<NAME>, C_<NAME>), so that fields.go holds
// the only spelling. Looked for: a field access or table constructor key
// (s.tk, {st = ...}), a JSON fragment in a string ('"tk":'), and a
// counter field built from a letter ('a' .. level).
func TestLuaNoBareKeys(t *testing.T) {
	alt := make([]string, len(stateFields))
	for i, f := range stateFields {
		alt[i] = regexp.QuoteMeta(f.Key)
	}
	keys := strings.Join(alt, "|")
	access := regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\.(` + keys + `)\b`)
	ctor := regexp.MustCompile(`[{,]\s*(` + keys + `)\s*=[^=]`)
	jsonKey := regexp.MustCompile(`\\?"(` + keys + `)\\?"\s*:`)
	letters := ""
	for _, c := range counterKinds {
		letters += regexp.QuoteMeta(c.Key)
	}
	counter := regexp.MustCompile(`['"][` + letters + `]['"]\s*\.\.`)
	helpers, scripts := luaNames(t)
	for _, name := range append(helpers, scripts...) {
		if _, gen := generatedLua[name]; gen {
			continue
		}
		src := luaFile(name)
		code, text := luaCode(src), luaBlank(src, false)
		for _, m := range access.FindAllStringSubmatch(code, -1) {
			require.True(t, luaKeyAllowed[m[0]], "lua/%s: %s: use the F_ name of %q (lua/fields.lua)", name, m[0], m[2])
		}
		for _, m := range ctor.FindAllStringSubmatchIndex(code, -1) {
			// In a table constructor (inside braces), not a multiple assignment.
			open := strings.Count(code[:m[0]], "{") - strings.Count(code[:m[0]], "}")
			require.LessOrEqual(t, open, 0, "lua/%s: table key %s: use [F_<NAME>] = (lua/fields.lua)", name, code[m[2]:m[3]])
		}
		require.NotRegexp(t, jsonKey, text, "lua/%s: a state key in a JSON string: build it from F_<NAME>", name)
		require.NotRegexp(t, counter, text, "lua/%s: a counter letter: use C_<NAME> (lua/fields.lua)", name)
	}
}

// What the scripts store is what queues held before the names of
// lua/fields.lua: a fresh lease's state byte for byte (fast_acks matches
// it), a scheduled task's state field for field, the counters' fields.
func TestStoredKeys(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, func(c *Config) { c.Levels = 3 })
		now := e.clk.Now().UnixMilli()
		a := e.enqueue("a", Level(1))
		later := e.enqueue("b", Level(2), ProcessIn(time.Minute))
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Groups: []LeaseGroup{{Levels: []int{1}, Count: 1, Pool: 2}}})
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		tok := res.Tasks[0].Token
		got, err := e.rdb.Get(e.ctx, e.c.keys.state(a.ID)).Result()
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf(`{"st":"active","l":"1","al":"1","w":"w","tk":"%s","stt":"%d","b":"2"}`, tok, now), got)
		raw, err := e.rdb.Get(e.ctx, e.c.keys.state(later.ID)).Result()
		require.NoError(t, err)
		var sched map[string]string
		require.NoError(t, json.Unmarshal([]byte(raw), &sched))
		require.Equal(t, map[string]string{"st": "scheduled", "pat": fmt.Sprint(now + time.Minute.Milliseconds()),
			"sl": "2", "l": "2"}, sched)
		n, err := e.rdb.HGetAll(e.ctx, e.c.keys.counts()).Result()
		require.NoError(t, err)
		require.Equal(t, map[string]string{"a1": "1", "s2": "1"}, n)
	})
}
