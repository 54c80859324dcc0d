package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// commandNames are the names of the CLI's commands, in the order of its
// table (what "overtake help" prints).
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

// The lists of the CLI's commands in the documentation name each of its
// commands and no other: README's and CONTRIBUTING's tables of packages,
// docs/operations.md's table of commands and the command's own doc.
func TestDocsListEveryCommand(t *testing.T) {
	backticked := regexp.MustCompile("`([a-z-]+)`")
	command := regexp.MustCompile(`overtake ([a-z-]+)`)
	for _, tc := range []struct {
		file string
		line *regexp.Regexp // the lines that list commands
		name *regexp.Regexp // a command's name in such a line
		// described: the names follow the table's first column (a
		// package table); else they precede the last one.
		described bool
	}{
		{"README.md", regexp.MustCompile("^\\| `cmd/overtake` \\| the CLI:"), backticked, true},
		{"CONTRIBUTING.md", regexp.MustCompile("^\\| `cmd/overtake/` \\| the CLI:"), backticked, true},
		{"docs/operations.md", regexp.MustCompile("^\\| `overtake [a-z]"), command, false},
		{"cmd/overtake/doc.go", regexp.MustCompile("^//\tovertake [a-z]"), command, false},
	} {
		raw, err := os.ReadFile(filepath.Join("..", "..", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var named []string
		for _, line := range strings.Split(string(raw), "\n") {
			if !tc.line.MatchString(line) {
				continue
			}
			if i := strings.Index(line, " | "); tc.described && i >= 0 {
				line = line[i+3:]
			} else if i := strings.LastIndex(line, " | "); !tc.described && i >= 0 {
				line = line[:i]
			}
			for _, m := range tc.name.FindAllStringSubmatch(line, -1) {
				if !slices.Contains(named, m[1]) {
					named = append(named, m[1])
				}
			}
		}
		for _, name := range commandNames() {
			if !slices.Contains(named, name) {
				t.Errorf("%s does not list the command %q", tc.file, name)
			}
		}
		for _, name := range named {
			if !slices.Contains(commandNames(), name) {
				t.Errorf("%s lists %q, which is not a command of overtake", tc.file, name)
			}
		}
	}
}
