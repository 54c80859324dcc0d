package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docExceptions are the packages whose doc examples this test does not
// check yet, with why.
var docExceptions = map[string]string{
	"runtime": "its doc is rewritten with the runtime's services (issue 28)",
}

// TestPackageDocExamplesCompile: every Go block of a package doc (doc.go
// of a package outside internal/, bench/ and scripts/) is compiled code:
// each of its lines, without indentation, is a line of one of the
// package's example_*_test.go files, in the block's order (lines between
// them may be left out, such as the error checks). So the code a reader
// copies from go doc is code that builds and, where the Example has an
// Output, runs. Blocks of shell commands and tables are not Go.
func TestPackageDocExamplesCompile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "internal", "bench", "scripts", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.Dir(rel)
		if d.Name() != "doc.go" || docExceptions[filepath.ToSlash(dir)] != "" {
			return nil
		}
		blocks, err := docGoBlocks(path)
		if err != nil || len(blocks) == 0 {
			return err
		}
		examples, err := exampleLines(filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, b := range blocks {
			checked++
			if missing, ok := inOrder(b, examples); !ok {
				t.Errorf("%s: the doc's Go block that starts %q is not in an example_*_test.go of the package: "+
					"no line %q after the lines before it", rel, b[0], missing)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 6 {
		t.Errorf("checked %d Go blocks of package docs, want at least 6 (queue, handlers, checkpoint, ...)", checked)
	}
}

// docGoBlocks returns the Go code blocks of a doc.go comment, each as its
// lines without indentation: runs of "//\t" lines whose first line is not
// a shell command or a table.
func docGoBlocks(path string) ([][]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var blocks [][]string
	var cur []string
	flush := func() {
		if len(cur) > 0 && isGo(cur[0]) {
			blocks = append(blocks, cur)
		}
		cur = nil
	}
	for _, line := range strings.Split(string(raw), "\n") {
		code, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			flush()
			continue
		}
		if code = strings.TrimSpace(code); code != "" {
			cur = append(cur, code)
		}
	}
	flush()
	return blocks, nil
}

// isGo reports whether a code block that starts with first is Go, not a
// shell command line or a table.
func isGo(first string) bool {
	word, _, _ := strings.Cut(first, " ")
	switch word {
	case "overtake", "go", "docker", "export", "redis-cli":
		return false
	}
	return !strings.HasPrefix(first, "|") && !strings.Contains(word, "=")
}

// exampleLines returns the lines, without indentation, of each
// example_*_test.go and example_test.go file of dir.
func exampleLines(dir string) ([][]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "example*_test.go"))
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var lines []string
		for _, l := range strings.Split(string(raw), "\n") {
			lines = append(lines, strings.TrimSpace(l))
		}
		out = append(out, lines)
	}
	return out, nil
}

// inOrder reports whether the lines of block are lines of one of files,
// in order; else it returns the first line it could not find in the file
// that matched the most.
func inOrder(block []string, files [][]string) (missing string, ok bool) {
	best := -1
	for _, lines := range files {
		i := 0
		for _, l := range lines {
			if i < len(block) && l == block[i] {
				i++
			}
		}
		if i == len(block) {
			return "", true
		}
		if i > best {
			best, missing = i, block[i]
		}
	}
	if best < 0 {
		missing = block[0] + " (the package has no example_*_test.go)"
	}
	return missing, false
}
