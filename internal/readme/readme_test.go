// Package readme compiles the Go snippets of the repository's README.md,
// so that they stay true as the API changes.
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

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/overtake/overtake/checkpoint"
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
	_ = checkpoint.Load[int]
	_ = console.New
	_ = runtime.New
	_ = otlp.Setup
)
`

var goBlock = regexp.MustCompile("(?s)\n```go\n(.*?)\n```")

// TestREADMESnippetsCompile builds every Go block of README.md as the body
// of a function (with "_ = v" added for each variable it declares, so a
// snippet need not use all it shows) in a package that exists only in a
// go build -overlay.
func TestREADMESnippetsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package with the go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 5 {
		t.Fatalf("found %d Go blocks in README.md, want at least 5", len(blocks))
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
	src := prelude
	for i, b := range blocks {
		src += "\n" + wrap(t, i+1, b[1])
	}
	add("snippets.go", src)
	ov, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	ovPath := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", ovPath, "./internal/readme/snippets")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README.md snippets do not compile (snippetN is the Nth Go block):\n%s", out)
	}
}

// wrap makes snippet n the body of func snippetN() error.
func wrap(t *testing.T, n int, body string) string {
	t.Helper()
	fn := fmt.Sprintf("func snippet%d() error {\n%s\n", n, body)
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+fn+"}\n", 0)
	if err != nil {
		t.Fatalf("README.md Go block %d does not parse: %v", n, err)
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
