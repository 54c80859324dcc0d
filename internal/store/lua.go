package store

import (
	"embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// luaFiles holds every script of the package, one file each under lua/,
// and the helper files they share. A file opens with a header: what it
// does, its KEYS, ARGV and reply, and the keys it builds from the prefix;
// a helper's header says what it defines ("-- defines:") and what it
// expects. lua/prelude.lua describes the data model and lists every key.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// usesPrefix starts the header line that names, in order, the helper
// files a script is assembled from.
const usesPrefix = "-- uses:"

// script returns the script lua/<name> as it runs: the files its
// "-- uses:" line names, in that order, then the file itself. Every
// *redis.Script of the package is made here (TestScriptsFromFiles).
func script(name string) *redis.Script { return redis.NewScript(luaSource(name)) }

// luaSource assembles lua/<name> (see script). It panics on a missing file
// or a helper named before the files it uses itself: the files are built
// into the binary, so that is a bug, found at package initialization by
// any test.
//
// A helper whose header has the line inlineMark (lua/fields.lua) is not
// joined: its constants are written where the script names them, so
// they cost nothing when it runs (a local each would be an upvalue of
// every function using it, walked for on every call of the script).
func luaSource(name string) string {
	body := luaFile(name)
	var b strings.Builder
	seen := map[string]bool{}
	consts := map[string]string{}
	for _, h := range luaUses(body) {
		for _, dep := range luaUses(luaFile(h)) {
			if !seen[dep] {
				panic(fmt.Sprintf("store: lua/%s uses %s before %s, which %s uses", name, h, dep, h))
			}
		}
		if seen[h] || h == name {
			panic(fmt.Sprintf("store: lua/%s names %s twice", name, h))
		}
		seen[h] = true
		if src := luaFile(h); strings.Contains(luaHeader(src), inlineMark) {
			for _, m := range luaConst.FindAllStringSubmatch(src, -1) {
				consts[m[1]] = m[2]
			}
			continue
		}
		b.WriteString(luaFile(h))
	}
	b.WriteString(body)
	if len(consts) == 0 {
		return b.String()
	}
	return luaInlineName.ReplaceAllStringFunc(b.String(), func(n string) string {
		v, ok := consts[n]
		if !ok {
			panic(fmt.Sprintf("store: lua/%s names %s, which no inlined file defines", name, n))
		}
		return v
	})
}

// inlineMark is the header line of a helper whose constants luaSource
// writes into the scripts instead of joining the file.
const inlineMark = "-- inline: its constants are written where they are named"

var (
	// luaConst is one constant of an inlined file: local NAME = 'literal'.
	luaConst = regexp.MustCompile(`(?m)^local ([A-Z][A-Z_]*) = ('[^'\\\n]*')`)
	// luaInlineName is a name an inlined file may define: F_<NAME> or
	// C_<NAME>.
	luaInlineName = regexp.MustCompile(`\b[FC]_[A-Z][A-Z_]*\b`)
)

// luaHeader returns the leading comment lines of src.
func luaHeader(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "--") {
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// luaFile returns the text of lua/<name>.
func luaFile(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic("store: " + err.Error())
	}
	return string(b)
}

// luaUses returns the files named on the "-- uses:" lines of src's
// header (its leading comment lines).
func luaUses(src string) []string {
	var out []string
	for line := range strings.Lines(src) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "--") {
			break
		}
		if rest, ok := strings.CutPrefix(line, usesPrefix); ok {
			out = append(out, strings.Fields(rest)...)
		}
	}
	return out
}

// Markers of script errors, mapped to sentinels by scriptErr. The scripts
// write them as literals (leaseLostMsg in lua/checkpoint.lua).
const (
	leaseLostMsg = "LEASE_LOST"
	corruptMsg   = "CORRUPT"
	schemaMsg    = "SCHEMA"
)
