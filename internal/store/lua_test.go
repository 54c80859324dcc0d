package store

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// luaNames returns the files under lua/, split into helpers (named on some
// file's "-- uses:" line) and scripts (the others).
func luaNames(t *testing.T) (helpers, scripts []string) {
	t.Helper()
	all, err := fs.Glob(luaFiles, "lua/*.lua")
	require.NoError(t, err)
	used := map[string]bool{}
	for _, p := range all {
		for _, h := range luaUses(luaFile(filepath.Base(p))) {
			used[h] = true
		}
	}
	for _, p := range all {
		if n := filepath.Base(p); used[n] {
			helpers = append(helpers, n)
		} else {
			scripts = append(scripts, n)
		}
	}
	for h := range used {
		require.Contains(t, helpers, h, "a -- uses: line names a file that is not under lua/")
	}
	return helpers, scripts
}

// Every script runs as its file under lua/ says: the package's Go code
// builds no *redis.Script but through script (lua.go), and loads every
// script file under lua/, each once.
func TestScriptsFromFiles(t *testing.T) {
	fset := token.NewFileSet()
	gofiles, err := filepath.Glob("*.go")
	require.NoError(t, err)
	loaded := map[string]string{} // file -> the Go file loading it
	for _, gf := range gofiles {
		if strings.HasSuffix(gf, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, gf, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				if x, ok := fn.X.(*ast.Ident); ok && x.Name == "redis" && fn.Sel.Name == "NewScript" {
					require.Equal(t, "lua.go", gf, "%s: redis.NewScript outside script (lua.go): scripts live in lua/", fset.Position(call.Pos()))
				}
			case *ast.Ident:
				if fn.Name == "script" {
					lit, ok := call.Args[0].(*ast.BasicLit)
					require.True(t, ok, "%s: script takes a file name literal", fset.Position(call.Pos()))
					name, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					require.NotContains(t, loaded, name, "%s: lua/%s loaded twice", fset.Position(call.Pos()), name)
					loaded[name] = gf
				}
			}
			return true
		})
	}
	helpers, scripts := luaNames(t)
	require.ElementsMatch(t, scripts, slices.Collect(maps.Keys(loaded)), "every script file under lua/ is loaded, and only those")
	for _, h := range helpers {
		require.NotContains(t, loaded, h, "lua/%s is a helper (named on a -- uses: line), not a script", h)
	}
	for _, s := range scripts {
		require.NotPanics(t, func() { luaSource(s) })
	}
}

// The values the scripts hold are the Go constants they mirror.
func TestLuaConstants(t *testing.T) {
	require.Contains(t, strings.Split(luaFile("anchor.lua"), "\n"),
		fmt.Sprintf("local ANCHOR, ANCHOR_SCORE, BELOW_ANCHOR = %q, %q, %q", anchorMember, anchorScore, belowAnchor))
	require.Contains(t, strings.Split(luaFile("buckets.lua"), "\n"),
		fmt.Sprintf("local RATE_BUCKET_MS, RATE_BUCKETS, RATE_KEEP_MS = %d, %d, %d",
			rateBucket.Milliseconds(), rateBuckets, rateKeep.Milliseconds()))
	require.Contains(t, luaFile("checkpoint.lua"), "redis.error_reply('"+leaseLostMsg+"')")
}

var (
	topLocal   = regexp.MustCompile(`(?m)^local (?:function ([\w]+)|([\w, ]+?)\s*=)`)
	argvUse    = regexp.MustCompile(`ARGV\[(\d+)\]`)
	argvHeader = regexp.MustCompile(`(?m)^-- ARGV\[(\d+)(\.\.)?\]`)
)

// headerOf returns the leading comment lines of a file.
func headerOf(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "--") {
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// The headers say what the files hold: a helper's "-- defines:" lines list
// exactly its top-level locals (.luacheckrc reads them), and a script's
// header documents its KEYS (absent among them), every ARGV it reads, its
// reply and the keys it touches.
func TestLuaHeaders(t *testing.T) {
	helpers, scripts := luaNames(t)
	for _, h := range helpers {
		src := luaFile(h)
		var want []string
		for _, m := range topLocal.FindAllStringSubmatch(src, -1) {
			if m[1] != "" {
				want = append(want, m[1])
			}
			for n := range strings.SplitSeq(m[2], ",") {
				if n = strings.TrimSpace(n); n != "" {
					want = append(want, n)
				}
			}
		}
		var defs []string
		for line := range strings.Lines(headerOf(src)) {
			if rest, ok := strings.CutPrefix(line, "-- defines:"); ok {
				defs = append(defs, strings.Fields(rest)...)
			}
		}
		require.ElementsMatch(t, want, defs, "lua/%s: -- defines: lines against its top-level locals", h)
	}
	for _, s := range scripts {
		src := luaFile(s)
		hdr := headerOf(src)
		for _, part := range []string{"-- KEYS", "-- ARGV[1] ", "-- Reply: ", "-- Keys it touches"} {
			require.Contains(t, hdr, part, "lua/%s: header", s)
		}
		// A script that touches keys it does not declare (the prelude's
		// helpers build them from the prefix) declares absent, so that a
		// migrating slot refuses it whole (see scriptKeys); one that
		// touches only its KEYS is refused whole by them.
		if slices.Contains(luaUses(src), "prelude.lua") {
			require.Contains(t, hdr, "absent, a key no one writes", "lua/%s: header declares absent", s)
		}
		documented, tail := map[int]bool{}, 0
		for _, m := range argvHeader.FindAllStringSubmatch(hdr, -1) {
			n, _ := strconv.Atoi(m[1])
			if m[2] != "" {
				tail = n
			} else {
				documented[n] = true
			}
		}
		for _, m := range argvUse.FindAllStringSubmatch(src[len(hdr):], -1) {
			n, _ := strconv.Atoi(m[1])
			require.True(t, documented[n] || (tail > 0 && n >= tail), "lua/%s reads ARGV[%d], which its header does not document", s, n)
		}
	}
}

// luacheck passes on every script as it runs (the helpers it uses and
// the file, concatenated), which finds what checking each file on its own
// (make lint) cannot: a script redefining or shadowing a helper's name.
// The helpers' own names are not reported as unused: a script uses some.
func TestLuacheckAssembled(t *testing.T) {
	bin, err := exec.LookPath("luacheck")
	if err != nil {
		t.Skip("luacheck not installed (Debian package lua-check)")
	}
	helpers, scripts := luaNames(t)
	args := []string{"--no-config", "--codes", "--std", "lua51", "--max-line-length", "140",
		"--read-globals", "redis", "cjson", "cmsgpack", "bit", "struct", "KEYS", "ARGV", "--ignore"}
	for _, h := range helpers {
		for _, m := range topLocal.FindAllStringSubmatch(luaFile(h), -1) {
			for n := range strings.SplitSeq(m[1]+","+m[2], ",") {
				if n = strings.TrimSpace(n); n != "" {
					args = append(args, "211/"+n)
				}
			}
		}
	}
	dir := t.TempDir()
	args = append(args, "--")
	for _, s := range scripts {
		p := filepath.Join(dir, s)
		require.NoError(t, os.WriteFile(p, []byte(luaSource(s)), 0o600))
		args = append(args, p)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	require.NoError(t, err, "luacheck on the assembled scripts:\n%s", out)
}
