package store

import (
	"embed"
	"fmt"
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
func luaSource(name string) string {
	body := luaFile(name)
	var b strings.Builder
	seen := map[string]bool{}
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
		b.WriteString(luaFile(h))
	}
	b.WriteString(body)
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
