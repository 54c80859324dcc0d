package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The fixture repository testdata/repo names everything in pkg/good.go
// the right way, and one stale reference of each kind a line in
// pkg/bad.go and lua/x.lua. check must report exactly the stale ones, on
// their lines, and nothing of pkg/gen.go (generated).
func TestCheckFindsEachKind(t *testing.T) {
	root := filepath.Join("testdata", "repo")
	allow, err := readAllow(filepath.Join(root, "scripts", "staleref", "allow.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := check(root, allow)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"file gone.go", "file docs/GONE.md", "file old.lua", "file deploy.sh", "file ci.yaml",
		"file ../shared/DESIGN.md",
		"test TestGone", "test BenchmarkGone", "test FuzzGone", "test ExampleGone",
		"selector a.Gone", "selector Thing.Gone", "selector Gone.Method", "selector time.NoSuchFunc",
		"call Gone()", "backquoted gone", "backquoted Thing.gone",
		"doclink [Gone]", "doclink [a.Gone]", "camel recoverPanic",
		"call gone_fn()", "file missing.lua",
	}
	var got []string
	for _, f := range res.findings {
		got = append(got, f.kind+" "+f.name)
		if f.file != "pkg/bad.go" && f.file != "lua/x.lua" {
			t.Errorf("finding outside bad.go and x.lua: %v", f)
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f.file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		name := strings.TrimSuffix(strings.Trim(f.name, "[]"), "()")
		if f.line < 1 || f.line > len(lines) || !strings.Contains(lines[f.line-1], name) {
			t.Errorf("%v: line %d does not hold %q", f, f.line, name)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res.files != 5 { // a.go, a_test.go, good.go, bad.go, x.lua
		t.Errorf("read %d files, want 5", res.files)
	}
}

// Without its allow-list, the fixture's reference to a file that another
// branch brings is stale.
func TestAllowListIsNeeded(t *testing.T) {
	res, err := check(filepath.Join("testdata", "repo"), map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.findings {
		if f.name == "docs/future.md" {
			return
		}
	}
	t.Error("docs/future.md not reported without the allow-list")
}
