package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// stdlib answers which names a standard library package declares. It
// parses a package's files the first time a comment names the package.
type stdlib struct {
	src   string
	dirs  map[string][]string        // package name -> directories
	names map[string]map[string]bool // package name -> top-level names
}

func newStdlib() *stdlib {
	s := &stdlib{names: map[string]map[string]bool{}}
	// Without go on PATH src stays empty: no package is then known, and
	// every standard library name a comment uses is reported.
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		s.src = filepath.Join(strings.TrimSpace(string(out)), "src")
	}
	return s
}

// isPkg reports whether name is the name of a standard library package.
func (s *stdlib) isPkg(name string) bool {
	if s.dirs == nil {
		s.dirs = map[string][]string{}
		if s.src == "" {
			return false
		}
		_ = filepath.WalkDir(s.src, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			switch d.Name() {
			case "cmd", "vendor", "internal", "testdata", "builtin":
				return filepath.SkipDir
			}
			if p != s.src {
				s.dirs[d.Name()] = append(s.dirs[d.Name()], p)
			}
			return nil
		})
	}
	return len(s.dirs[name]) > 0
}

// has reports whether a standard library package named pkg declares name
// at its top level (a function, type, constant or variable).
func (s *stdlib) has(pkg, name string) bool {
	if !s.isPkg(pkg) {
		return false
	}
	top, ok := s.names[pkg]
	if !ok {
		top = map[string]bool{}
		for _, dir := range s.dirs[pkg] {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				n := e.Name()
				if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
					continue
				}
				f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, n), nil, parser.SkipObjectResolution)
				if err != nil || f.Name.Name != pkg {
					continue
				}
				for _, d := range f.Decls {
					switch d := d.(type) {
					case *ast.FuncDecl:
						if d.Recv == nil {
							top[d.Name.Name] = true
						}
					case *ast.GenDecl:
						for _, sp := range d.Specs {
							switch sp := sp.(type) {
							case *ast.TypeSpec:
								top[sp.Name.Name] = true
							case *ast.ValueSpec:
								for _, id := range sp.Names {
									top[id.Name] = true
								}
							}
						}
					}
				}
			}
		}
		s.names[pkg] = top
	}
	return top[name]
}
