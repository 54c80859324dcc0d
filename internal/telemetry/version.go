package telemetry

import (
	"runtime/debug"
	"sync"
)

// ModulePath is the path of the Go module Overtake is built from.
const ModulePath = "github.com/overtake/overtake"

// devel is the version the go command gives a module built from a work
// tree rather than from a tagged download.
const devel = "(devel)"

// Version returns the version of the Overtake module linked into this
// binary, read from its build info: a release or pseudo-version, or for a
// build from a work tree "devel-<12 hex digits of the VCS revision>"
// ("-dirty" when modified), or "(devel)" when the go command recorded no
// revision (go test, go run). "" when the binary has no build info.
// [Tracer] records it as the instrumentation scope's version.
func Version() string { return versions().overtake }

// MainVersion returns the version of the program's main module, read from
// its build info the same way as [Version]: what package tracing/otlp
// records as service.version unless told otherwise.
func MainVersion() string { return versions().main }

var versions = sync.OnceValue(func() (v struct{ main, overtake string }) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.main = moduleVersion(&bi.Main, bi.Settings)
	if bi.Main.Path == ModulePath {
		v.overtake = v.main
		return v
	}
	for _, m := range bi.Deps {
		if m.Path == ModulePath {
			v.overtake = moduleVersion(m, nil)
			break
		}
	}
	return v
})

// moduleVersion returns m's version, its replacement's if it is replaced;
// a work-tree build ("(devel)") is named by its VCS revision in settings
// when there is one.
func moduleVersion(m *debug.Module, settings []debug.BuildSetting) string {
	if m.Replace != nil && m.Replace.Version != "" {
		return m.Replace.Version
	}
	if m.Version != "" && m.Version != devel {
		return m.Version
	}
	var rev, dirty string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return m.Version
	}
	return "devel-" + rev[:min(12, len(rev))] + dirty
}
