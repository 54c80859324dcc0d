// Package readme compiles the Go snippets of the repository's README.md
// and docs/*.md, so that they stay true as the API changes.
package readme

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// prelude declares what the snippets take for granted: a context, a Redis
// client, a queue, a handler mux, a logger and the example's own types.
const prelude = `package snippets

import (
	"context"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/checkpoint/checkpointtest"
	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
	"github.com/overtake/overtake/tracing/otlp"
)

var (
	ctx    context.Context
	rdb    redis.UniversalClient
	q      *queue.Client
	mux    *handlers.Mux
	logger *zap.Logger
)

type ResizeArgs struct{ Parts int }

type Progress struct{ Done int }

func resizePart(ResizeArgs, int) {}

var (
	_ = log.Fatal
	_ = http.Handle
	_ = os.Interrupt
	_ = signal.NotifyContext
	_ = syscall.SIGTERM
	_ = time.Second
	_ = checkpoint.Load[int]
	_ checkpointtest.Saver
	_ = miniredis.RunT
	_ = require.NoError
	_ = testing.Short
	_ = zaptest.NewLogger
	_ = console.New
	_ = runtime.New
	_ = otlp.Setup
)
`

var goBlock = regexp.MustCompile("(?s)\n```go\n(.*?)\n```")

// TestREADMESnippetsCompile builds every Go block of README.md and
// docs/*.md as the body of a function (with "_ = v" added for each variable
// it declares, so a snippet need not use all it shows) in a package that
// exists only in a go build -overlay. A block that starts with "func " or
// a comment followed by one holds top-level declarations (a test function,
// the handler it tests) and is compiled as it is; one that starts with
// "import" is such declarations with the imports they use, compiled as a
// file of its own in the same package. Their names must be unique across
// the docs. Its test functions (a name that starts with
// "Test", one *testing.T parameter) also run, as subtests of the one test
// of the overlay package.
func TestREADMESnippetsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package with the go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, where, tests := prelude, []string{}, []string{}
	files := map[string]string{} // the blocks that are files of their own
	for _, file := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		blocks := goBlock.FindAllStringSubmatch(string(text), -1)
		if rel == "README.md" && len(blocks) < 2 {
			t.Fatalf("found %d Go blocks in README.md, want at least 2 (a producer and a worker)", len(blocks))
		}
		for i, b := range blocks {
			n := len(where) + 1
			where = append(where, fmt.Sprintf("snippet%d: %s, Go block %d", n, rel, i+1))
			if hasImports(b[1]) {
				files[fmt.Sprintf("snippet%d.go", n)] = "package snippets\n\n// " + where[n-1] + "\n\n" + b[1] + "\n"
				tests = append(tests, testFuncs(t, where[n-1], b[1])...)
				continue
			}
			if topLevel(b[1]) {
				src += "\n// " + where[n-1] + "\n" + b[1] + "\n"
				tests = append(tests, testFuncs(t, where[n-1], b[1])...)
				continue
			}
			src += "\n" + wrap(t, n, where[n-1], b[1])
		}
	}
	dir := filepath.Join(root, "internal", "readme", "snippets") // overlay only
	overlay := map[string]string{}
	add := func(name, src string) {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(dir, name)] = p
	}
	add("snippets.go", src)
	for name, src := range files {
		add(name, src)
	}
	runner := "package snippets\n\nimport \"testing\"\n\nfunc TestDocSnippets(t *testing.T) {\n\t_ = t\n"
	for _, name := range tests {
		runner += fmt.Sprintf("\tt.Run(%q, %s)\n", name, name)
	}
	add("snippets_test.go", runner+"}\n")
	ov, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	ovPath := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o600); err != nil {
		t.Fatal(err)
	}
	// The package directory exists only in the overlay: build the test
	// binary, then run it elsewhere.
	bin := filepath.Join(t.TempDir(), "snippets.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, "-overlay", ovPath, "-vet=off", "./internal/readme/snippets")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Go snippets do not compile:\n%s\nwhere snippetN is:\n%s", out, strings.Join(where, "\n"))
	}
	cmd = exec.Command(bin, "-test.run", "^TestDocSnippets$", "-test.count", "1")
	cmd.Dir = filepath.Dir(bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the tests of the Go snippets fail:\n%s\nwhere snippetN is:\n%s", out, strings.Join(where, "\n"))
	}
}

// wrap makes snippet n, found where the caller says, the body of func
// snippetN() error.
func wrap(t *testing.T, n int, where, body string) string {
	t.Helper()
	fn := fmt.Sprintf("func snippet%d() error {\n%s\n", n, body)
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+fn+"}\n", 0)
	if err != nil {
		t.Fatalf("%s does not parse: %v", where, err)
	}
	var uses []string
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		if as, ok := st.(*ast.AssignStmt); ok && as.Tok == token.DEFINE {
			for _, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					uses = append(uses, "\t_ = "+id.Name)
				}
			}
		}
	}
	return fn + strings.Join(uses, "\n") + "\n\treturn nil\n}\n"
}

// topLevel reports whether a snippet is top-level declarations: its first
// line that is not a comment starts with "func ".
func topLevel(body string) bool {
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "//") {
			return strings.HasPrefix(line, "func ")
		}
	}
	return false
}

// hasImports reports whether a snippet is a file's declarations with its
// imports: its first line that is not a comment starts with "import".
func hasImports(body string) bool {
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "//") {
			return strings.HasPrefix(line, "import ")
		}
	}
	return false
}

// testFuncs returns the names of the test functions that a top-level
// snippet, found where the caller says, declares.
func testFuncs(t *testing.T, where, body string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+body, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s does not parse: %v", where, err)
	}
	var names []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") && fd.Type.Params.NumFields() == 1 {
			names = append(names, fd.Name.Name)
		}
	}
	return names
}
