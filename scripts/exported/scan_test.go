package main

import (
	"os"
	"path/filepath"
	"testing"
)

// No exported type of a public package is an alias of an internal one,
// and the surface is within limit.
func TestRepoSurface(t *testing.T) {
	s, err := scan("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.aliases) > 0 {
		t.Errorf("aliases of internal types in public packages: %v", s.aliases)
	}
	total := 0
	for p, n := range s.names {
		total += n + s.fields[p]
	}
	if s.names["queue"] == 0 || total > limit {
		t.Errorf("%d exported names and fields (queue: %d names), want 1..%d", total, s.names["queue"], limit)
	}
}

// scan finds an alias of an internal type, also inside a composite type,
// counts exported fields, embedded ones too, and leaves internal, cmd and
// test files out.
func TestScanFindsAliases(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("pub/pub.go", `package pub

import (
	"time"

	st "example.com/m/internal/store"
)

type Info = st.Info
type List = []*st.Task
type Dur = time.Duration
type own struct{ A int }
type Rec struct {
	Info
	*time.Location
	ID, name string
	At       time.Time
}

func (Rec) M()  {}
func (own) N() {}
`)
	write("pub/pub_test.go", "package pub\n\nimport \"example.com/m/internal/store\"\n\ntype T = store.Info\n")
	write("internal/store/store.go", "package store\n\ntype Info struct{ A, B int }\n")
	write("cmd/x/main.go", "package main\n\nimport \"example.com/m/internal/store\"\n\ntype T = store.Info\n\nfunc main() {}\n")
	s, err := scan(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pub.Info = example.com/m/internal/store.Info", "pub.List = example.com/m/internal/store.Task"}
	if len(s.aliases) != 2 || s.aliases[0] != want[0] || s.aliases[1] != want[1] {
		t.Errorf("aliases %q, want %q", s.aliases, want)
	}
	// Info, List, Dur, Rec and Rec.M; Info, Location, ID and At.
	if s.names["pub"] != 5 || s.fields["pub"] != 4 || len(s.names) != 1 {
		t.Errorf("names %v, fields %v; want pub: 5 names, 4 fields", s.names, s.fields)
	}
}
