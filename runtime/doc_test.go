package runtime_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocFlowIsExample checks that the main flow the package doc shows is
// code that compiles and runs: each of its lines is a line of Example.
func TestDocFlowIsExample(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, body, ok := strings.Cut(string(example), "func Example() {")
	require.True(t, ok, "example_test.go has no Example")
	body, _, ok = strings.Cut(body, "\n}\n")
	require.True(t, ok, "Example has no end")
	lines := map[string]bool{}
	for _, l := range strings.Split(body, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	code := 0
	for _, l := range strings.Split(string(doc), "\n") {
		l, ok := strings.CutPrefix(l, "//\t")
		if !ok {
			continue
		}
		code++
		require.Truef(t, lines[strings.TrimSpace(l)], "doc.go shows %q, which is no line of Example", l)
	}
	require.GreaterOrEqual(t, code, 10, "doc.go shows no main flow")
}
