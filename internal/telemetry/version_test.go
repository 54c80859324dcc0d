package telemetry

import (
	"context"
	"runtime/debug"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	t.Parallel()
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name     string
		m        debug.Module
		settings []debug.BuildSetting
		want     string
	}{
		{"release", debug.Module{Version: "v1.2.3"}, rev, "v1.2.3"},
		{"replaced", debug.Module{Version: "v1.2.3", Replace: &debug.Module{Version: "v1.2.4"}}, nil, "v1.2.4"},
		{"replaced by a directory", debug.Module{Version: "v1.2.3", Replace: &debug.Module{Path: "../o"}}, nil, "v1.2.3"},
		{"work tree", debug.Module{Version: devel}, rev, "devel-0123456789ab-dirty"},
		{"clean work tree", debug.Module{Version: devel}, rev[:1], "devel-0123456789ab"},
		{"no revision", debug.Module{Version: devel}, nil, devel},
	} {
		if got := moduleVersion(&tc.m, tc.settings); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A test binary's main module is Overtake: both versions are its version,
// and the tracer's scope carries it.
func TestVersionOfThisBinary(t *testing.T) {
	t.Parallel()
	if Version() == "" || Version() != MainVersion() {
		t.Fatalf("Version %q, MainVersion %q: want the same non-empty version", Version(), MainVersion())
	}
	tp, rec := newRecorder(t)
	_, s := Tracer(tp).Start(context.Background(), "x")
	s.End()
	if got := rec.Ended()[0].InstrumentationScope().Version; got != Version() {
		t.Errorf("scope version %q, want %q", got, Version())
	}
}
