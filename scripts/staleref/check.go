package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// finding is one comment reference that names nothing.
type finding struct {
	file string
	line int
	kind string // file, test, selector, call, backquoted, doclink, camel
	name string
	why  string
}

func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s reference %q: %s", f.file, f.line, f.kind, f.name, f.why)
}

// result is what check found, and in how many files it looked.
type result struct {
	findings []finding
	files    int
}

var (
	// fileRE: a path or base name with one of the checked extensions. The
	// character before it may not belong to a path, so URLs and globs
	// (*.go, *_test.go) never match; the one after is checked in scan.
	fileRE = regexp.MustCompile(`(?:^|[^\w./*-])((?:\.\.?/)*(?:[\w.-]+/)*[\w.-]+\.(?:go|md|lua|sh|yml|yaml))`)
	testRE = regexp.MustCompile(`(?:^|\W)((?:Test|Benchmark|Fuzz)[A-Z0-9_]\w*|Example(?:_\w+|[A-Z]\w*))(\*?)`)
	// chainRE: a.B, a.B.C, with an optional trailing () (a call).
	chainRE = regexp.MustCompile(`(?:^|[^\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(\(\))?`)
	callRE  = regexp.MustCompile(`(?:^|[^\w.])([A-Za-z_]\w*)\(\)`)
	quoteRE = regexp.MustCompile("`([^`\n]+)`")
	identRE = regexp.MustCompile(`^\*?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\(\))?$`)
	linkRE  = regexp.MustCompile(`(?:^|[^\w\]\[])\[\*?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\]`)
	// camelRE: a bare camel-case word that starts in lower case, shaped
	// like nothing but a code name; words that start in upper case are left
	// alone (GitHub, OpenTelemetry).
	camelRE = regexp.MustCompile(`(?:^|[^\w.])([a-z]+[A-Z]\w*)`)
	capsRE  = regexp.MustCompile(`^[A-Z0-9_]+$`)
)

// predeclared holds Go's keywords and predeclared identifiers.
var predeclared = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`break case chan const continue default defer else fallthrough for func go goto if
		import interface map package range return select struct switch type var
		any bool byte comparable complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string
		uint uint8 uint16 uint32 uint64 uintptr true false iota nil append cap clear close complex copy delete imag
		len make max min new panic print println real recover`) {
		predeclared[w] = true
	}
}

// readAllow reads an allow-list: one name a line, # starts a comment. A
// missing file is an empty list.
func readAllow(p string) (map[string]bool, error) {
	allow := map[string]bool{}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return allow, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l, _, _ := strings.Cut(sc.Text(), "#")
		if l = strings.TrimSpace(l); l != "" {
			allow[l] = true
		}
	}
	return allow, sc.Err()
}

type checker struct {
	ix    *index
	allow map[string]bool
	seen  map[string]bool
	out   []finding
}

// check indexes root and checks the comments of its Go and Lua files.
func check(root string, allow map[string]bool) (*result, error) {
	ix, err := build(root)
	if err != nil {
		return nil, err
	}
	c := &checker{ix: ix, allow: allow, seen: map[string]bool{}}
	for _, gf := range ix.goFiles {
		for _, cg := range gf.ast.Comments {
			for _, cm := range cg.List {
				if strings.HasPrefix(cm.Text, "//go:") || strings.HasPrefix(cm.Text, "//line ") {
					continue
				}
				c.scan(gf, gf.rel, gf.fset.Position(cm.Pos()).Line, cm.Text)
			}
		}
	}
	for _, rel := range ix.luaFiles {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		block := false
		for i, l := range strings.Split(string(b), "\n") {
			switch {
			case block:
				c.scan(nil, rel, i+1, l)
				block = !strings.Contains(l, "]]")
			case strings.Contains(l, "--"):
				_, com, _ := strings.Cut(l, "--")
				c.scan(nil, rel, i+1, com)
				block = strings.HasPrefix(com, "[[") && !strings.Contains(com, "]]")
			}
		}
	}
	sort.Slice(c.out, func(i, j int) bool {
		a, b := c.out[i], c.out[j]
		if a.file != b.file {
			return a.file < b.file
		}
		return a.line < b.line
	})
	return &result{findings: c.out, files: len(ix.goFiles) + len(ix.luaFiles)}, nil
}

func (c *checker) report(file string, line int, kind, name, why string) {
	key := fmt.Sprintf("%s:%d:%s", file, line, strings.TrimSuffix(strings.Trim(name, "[]"), "()"))
	if c.seen[key] || c.allow[name] {
		return
	}
	c.seen[key] = true
	c.out = append(c.out, finding{file: file, line: line, kind: kind, name: name, why: why})
}

// scan checks one comment's text; line is the line it starts on. gf is
// nil for a Lua comment.
func (c *checker) scan(gf *goFile, file string, line int, text string) {
	at := func(i int) int { return line + strings.Count(text[:i], "\n") }
	for _, m := range fileRE.FindAllStringSubmatchIndex(text, -1) {
		ref, end := text[m[2]:m[3]], m[3]
		if end < len(text) && (isWord(text[end]) || text[end] == '/' || text[end] == '-' ||
			text[end] == '.' && end+1 < len(text) && isWord(text[end+1])) {
			continue // part of a longer name: pkg.go.dev, x.gob
		}
		if !strings.HasPrefix(ref, "_") && !c.fileExists(file, ref) {
			c.report(file, at(m[2]), "file", ref, "no such file in the repository")
		}
	}
	for _, m := range testRE.FindAllStringSubmatchIndex(text, -1) {
		name, glob := text[m[2]:m[3]], m[5] > m[4]
		if !c.testExists(name, glob) {
			c.report(file, at(m[2]), "test", name, "no such test, benchmark, fuzz target or example")
		}
	}
	for _, m := range quoteRE.FindAllStringSubmatchIndex(text, -1) {
		q := identRE.FindStringSubmatch(text[m[2]:m[3]])
		if q == nil {
			continue
		}
		if ok, why := c.resolve(gf, q[1]); !ok {
			c.report(file, at(m[2]), "backquoted", q[1], why)
		}
	}
	for _, m := range linkRE.FindAllStringSubmatchIndex(text, -1) {
		name, end := text[m[2]:m[3]], m[1]
		if end < len(text) && (text[end] == '(' || text[end] == ':' || text[end] == '[') {
			continue // a Markdown link or link definition
		}
		last := name[strings.LastIndex(name, ".")+1:]
		if !isUpper(last[0]) || capsRE.MatchString(last) {
			continue // doc links name exported identifiers
		}
		if ok, why := c.resolve(gf, name); !ok {
			c.report(file, at(m[2]), "doclink", "["+name+"]", why)
		}
	}
	for _, m := range chainRE.FindAllStringSubmatchIndex(text, -1) {
		chain, call := text[m[2]:m[3]], m[5] > m[4]
		if !call && !hasUpperTail(chain) {
			continue
		}
		if ok, why := c.resolve(gf, chain); !ok {
			c.report(file, at(m[2]), "selector", chain, why)
		}
	}
	for _, m := range callRE.FindAllStringSubmatchIndex(text, -1) {
		if ok, why := c.resolve(gf, text[m[2]:m[3]]); !ok {
			c.report(file, at(m[2]), "call", text[m[2]:m[3]]+"()", why)
		}
	}
	for _, m := range camelRE.FindAllStringSubmatchIndex(text, -1) {
		bol := strings.LastIndex(text[:m[2]], "\n") + 1
		if strings.HasPrefix(strings.TrimPrefix(text[bol:], "//"), "\t") {
			continue // a code example in a doc comment may use names of its own
		}
		if w := text[m[2]:m[3]]; !c.known(w) {
			c.report(file, at(m[2]), "camel", w, "declared nowhere in the repository")
		}
	}
}

func isWord(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func isUpper(b byte) bool { return b >= 'A' && b <= 'Z' }

// hasUpperTail reports whether a part after the first dot is capitalised:
// a.B names code, a.b is as likely a file or host name.
func hasUpperTail(chain string) bool {
	parts := strings.Split(chain, ".")
	for _, p := range parts[1:] {
		if isUpper(p[0]) {
			return true
		}
	}
	return false
}

// fileExists resolves a file reference made in file from: a path relative
// to the root or to from's directory, a path's tail, or a base name.
func (c *checker) fileExists(from, ref string) bool {
	if c.allow[ref] {
		return true
	}
	r := strings.TrimPrefix(ref, "./")
	if !strings.Contains(r, "/") {
		return c.ix.bases[r]
	}
	if p := path.Join(path.Dir(from), r); !strings.HasPrefix(p, "../") && c.ix.files[p] {
		return true
	}
	if strings.HasPrefix(r, "../") {
		return false // outside the repository, or not there
	}
	r = path.Clean(r)
	if c.ix.files[r] || c.allow[r] {
		return true
	}
	for f := range c.ix.files {
		if strings.HasSuffix(f, "/"+r) {
			return true
		}
	}
	return false
}

func (c *checker) testExists(name string, glob bool) bool {
	if !glob {
		return c.ix.funcs[name]
	}
	for f := range c.ix.funcs {
		if strings.HasPrefix(f, name) {
			return true
		}
	}
	return false
}
