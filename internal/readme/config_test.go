package readme

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configStructs are the structs docs/configuration.md documents: the
// heading of each one's section, and the package directory and type that
// declare it.
var configStructs = []struct{ heading, dir, typ string }{
	{"queue.Config", "queue", "Config"},
	{"runtime.Config", "runtime", "Config"},
	{"runtime.Pool", "runtime", "Pool"},
	{"runtime.Autoscale", "runtime", "Autoscale"},
	{"runtime.Periodic", "runtime", "Periodic"},
	{"preempt.Policy", "preempt", "Policy"},
}

// TestConfigurationDocumented fails when an exported field of a
// configuration struct has no table row (one whose first cell is
// `Field`) in its section of docs/configuration.md, or when a row names a
// field the struct does not have.
func TestConfigurationDocumented(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := docSections(string(doc))
	for _, s := range configStructs {
		fields, err := exportedFields(filepath.Join(root, s.dir), s.typ)
		if err != nil {
			t.Fatalf("%s: %v", s.heading, err)
		}
		if len(fields) == 0 {
			t.Fatalf("%s: no exported fields found in %s.%s", s.heading, s.dir, s.typ)
		}
		rows, ok := sections[s.heading]
		if !ok {
			t.Errorf("docs/configuration.md has no section \"## `%s`\"", s.heading)
			continue
		}
		for _, f := range fields {
			if !slices.Contains(rows, f) {
				t.Errorf("docs/configuration.md, section %s: no row for field `%s`", s.heading, f)
			}
		}
		for _, r := range rows {
			if !slices.Contains(fields, r) {
				t.Errorf("docs/configuration.md, section %s: row `%s` is not a field of %s.%s", s.heading, r, s.dir, s.typ)
			}
		}
	}
}

var (
	sectionHeading = regexp.MustCompile("^## `([^`]+)`$")
	fieldRow       = regexp.MustCompile("^\\| `([A-Za-z0-9_]+)` \\|")
)

// docSections returns, for each "## `Name`" section of a Markdown text,
// the field names of its table rows in order.
func docSections(md string) map[string][]string {
	out := map[string][]string{}
	cur := ""
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "#") {
			cur = ""
			if m := sectionHeading.FindStringSubmatch(line); m != nil {
				cur = m[1]
				out[cur] = []string{}
			}
			continue
		}
		if m := fieldRow.FindStringSubmatch(line); m != nil && cur != "" {
			out[cur] = append(out[cur], m[1])
		}
	}
	return out
}

// exportedFields parses the non-test Go files of dir and returns the
// exported field names of struct type typ, in declaration order.
func exportedFields(dir, typ string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != typ {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, fld := range st.Fields.List {
				for _, id := range fld.Names {
					if id.IsExported() {
						names = append(names, id.Name)
					}
				}
				if len(fld.Names) == 0 { // embedded: its type's name
					if id, ok := fld.Type.(*ast.Ident); ok && id.IsExported() {
						names = append(names, id.Name)
					}
				}
			}
			return false
		})
	}
	return names, nil
}
