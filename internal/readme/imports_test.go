package readme

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// importExceptions are the docs whose Go blocks this test does not check
// yet, with why.
var importExceptions = map[string]string{
	"docs/design.md": "another helper rewrites it (issue 28); its one block uses runtime",
}

// TestSnippetsGiveImportPaths: every Go block of README.md and docs/*.md
// names the import path of each package outside the standard library
// that its code uses (in an import declaration, or a comment such as
// `// import "github.com/overtake/overtake/queue"` in a block that is a
// function's body), so a reader who copies it knows where each name
// comes from. A name in a comment needs no import.
func TestSnippetsGiveImportPaths(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	paths := preludeImports(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile(`(?m)(^|\s)//.*$`)
	for _, file := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		rel, _ := filepath.Rel(root, file)
		if importExceptions[filepath.ToSlash(rel)] != "" {
			continue
		}
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range goBlock.FindAllStringSubmatch(string(text), -1) {
			code := comment.ReplaceAllString(b[1], "")
			for name, path := range paths {
				used := regexp.MustCompile(`(^|[^.\w])` + name + `\.`).MatchString(code)
				if used && !strings.Contains(b[1], strconv.Quote(path)) {
					t.Errorf("%s, Go block %d: uses %s. but does not give its import path %q", rel, i+1, name, path)
				}
			}
		}
	}
}

// preludeImports returns the packages outside the standard library that
// the snippets' prelude imports, by the name they are used under.
func preludeImports(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "prelude.go", prelude, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, spec := range f.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		if first, _, _ := strings.Cut(path, "/"); !strings.Contains(first, ".") {
			continue // the standard library
		}
		parts := strings.Split(path, "/")
		name := parts[len(parts)-1]
		if regexp.MustCompile(`^v\d+$`).MatchString(name) {
			name = parts[len(parts)-2]
		}
		name = strings.TrimPrefix(name, "go-") // go-redis is package redis
		if spec.Name != nil {
			name = spec.Name.Name
		}
		out[name] = path
	}
	return out
}
