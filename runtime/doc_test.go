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
	body := string(example)
	body = body[strings.Index(body, "func Example() {"):]
	body = body[:strings.Index(body, "\n}\n")]
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
