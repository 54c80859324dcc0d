package store

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testredis"
)

// maxLuaDepth is how deep a script's blocks may nest: a function body,
// and each if, for, while, repeat and do block inside it, is one level
// (a one-line "if x then y end" counts too).
const maxLuaDepth = 4

// luaCode returns src with its comments and string literals blanked
// (each replaced by spaces, newlines kept), so that what is left is
// keywords, names and operators, on their lines.
func luaCode(src string) string { return luaBlank(src, true) }

// luaBlank returns src with its comments blanked, and its string
// literals too when strs.
func luaBlank(src string, strs bool) string {
	b := []byte(src)
	blank := func(from, to int) {
		for k := from; k < to && k < len(b); k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
	}
	// long returns the end (past "]=*]") of a long bracket opening at i, or -1.
	long := func(i int) int {
		j := i + 1
		for j < len(src) && src[j] == '=' {
			j++
		}
		if j >= len(src) || src[i] != '[' || src[j] != '[' {
			return -1
		}
		end := strings.Index(src[j:], "]"+strings.Repeat("=", j-i-1)+"]")
		if end < 0 {
			return len(src)
		}
		return j + end + j - i + 1
	}
	for i := 0; i < len(src); {
		switch c := src[i]; {
		case strings.HasPrefix(src[i:], "--"):
			end := long(i + 2)
			if end < 0 {
				end = strings.IndexByte(src[i:], '\n')
				if end < 0 {
					end = len(src)
				} else {
					end += i
				}
			}
			blank(i, end)
			i = end
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if strs {
				blank(i, j+1)
			}
			i = j + 1
		case c == '[' && long(i) >= 0:
			end := long(i)
			if strs {
				blank(i, end)
			}
			i = end
		default:
			i++
		}
	}
	return string(b)
}

var luaWord = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// luaDepth returns how deep src's blocks nest at most, and the first line
// where they do.
func luaDepth(src string) (depth, line int) {
	open, loops := 0, 0 // loops: for/while blocks whose "do" is still to come
	for n, l := range strings.Split(luaCode(src), "\n") {
		for _, w := range luaWord.FindAllString(l, -1) {
			switch w {
			case "function", "if", "repeat":
				open++
			case "for", "while":
				open++
				loops++
			case "do":
				if loops > 0 {
					loops--
				} else {
					open++
				}
			case "end", "until":
				open--
			}
			if open > depth {
				depth, line = open, n+1
			}
		}
	}
	return depth, line
}

// No script nests its blocks deeper than maxLuaDepth: a deeper step is a
// named function of its own.
func TestLuaNesting(t *testing.T) {
	helpers, scripts := luaNames(t)
	for _, name := range append(helpers, scripts...) {
		d, line := luaDepth(luaFile(name))
		require.LessOrEqual(t, d, maxLuaDepth, "lua/%s:%d nests %d levels deep", name, line, d)
	}
	d, _ := luaDepth("local function f()\n  for i = 1, 2 do\n    if i then while x do y() end end\n  end\nend\n")
	require.Equal(t, 4, d, "luaDepth counts function, for, if and while blocks")
	d, _ = luaDepth("-- if for while function\nlocal s = 'if then end' .. \"do\" .. [[repeat]]\n")
	require.Zero(t, d, "luaDepth skips comments and strings")
}

// leaseStages are the steps of a lease (lua/lease.lua), in the order its
// main body calls them; promote, recover and age are prelude.lua's.
var leaseStages = []string{
	"end_acks", "promote", "recover", "age", "choose_levels", "pop", "load_tasks", "admit", "write", "reply",
}

// maxLeaseBody is how many lines of code the main body of lua/lease.lua
// (what follows its last top-level function) may have.
const maxLeaseBody = 30

// The lease script reads as its stages: each is a local function of the
// assembled script, and the main body is a short sequence of calls to
// them, in order.
func TestLeaseStages(t *testing.T) {
	code := luaCode(luaFile("lease.lua"))
	all := luaCode(luaSource("lease.lua"))
	for _, s := range leaseStages {
		require.Regexp(t, `(?m)^local function `+s+`\(`, all, "lease.lua: stage %s is a top-level local function", s)
	}
	// The main body: the lines after the end of the last top-level function.
	lines := strings.Split(code, "\n")
	last := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "local function ") {
			last = i
		}
	}
	require.GreaterOrEqual(t, last, 0, "lease.lua defines its stages")
	end := slices.Index(lines[last:], "end")
	require.Positive(t, end, "lease.lua: its last function ends")
	var kept []string
	for _, l := range lines[last+end+1:] {
		if strings.TrimSpace(l) != "" {
			kept = append(kept, l)
		}
	}
	require.LessOrEqual(t, len(kept), maxLeaseBody, "lease.lua: the main body is %d lines", len(kept))
	text := strings.Join(kept, "\n")
	at := 0
	for _, s := range leaseStages {
		loc := regexp.MustCompile(`\b` + s + `\(`).FindStringIndex(text[at:])
		require.NotNil(t, loc, "lease.lua: the main body calls %s after the stages before it", s)
		at += loc[1]
	}
}

// A lease that meets a wrong-typed list (an LMPOP failing inside pcall)
// still writes every lease it hands out: in miniredis's Lua an error
// caught by pcall closes every open upvalue, which must not split what
// the lease's stages and its main body share (lease.lua keeps it in one
// table).
func TestLeaseAfterCaughtError(t *testing.T) {
	parallelBackends(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, b, nil)
		require.NoError(t, e.rdb.HSet(e.ctx, e.c.keys.pending(2), "oops", "1").Err())
		a := e.enqueue("a", Level(1))
		res, err := e.c.Lease(e.ctx, LeaseRequest{Worker: "w", Count: 2})
		require.NoError(t, err)
		require.Len(t, res.Corrupt, 1)
		require.Len(t, res.Tasks, 1)
		require.Equal(t, a.ID, res.Tasks[0].ID)
		busy, err := e.rdb.HGet(e.ctx, e.c.keys.busy(), "w").Result()
		require.NoError(t, err)
		require.Equal(t, "1", busy)
		score, err := e.rdb.ZScore(e.ctx, e.c.keys.leases(), a.ID).Result()
		require.NoError(t, err)
		require.Positive(t, score)
		require.NoError(t, e.c.Ack(e.ctx, res.Tasks[0]))
	})
}
