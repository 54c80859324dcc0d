package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// surface is what scan found: exported names and struct fields by
// package directory, and the aliases of internal types ("queue.TaskInfo =
// internal/store.Info").
type surface struct {
	names, fields map[string]int
	aliases       []string
}

// skipped are the directories whose packages are not public API.
var skipped = map[string]bool{"internal": true, "cmd": true, "examples": true, "bench": true, "e2e": true,
	"scripts": true, "testdata": true}

// scan reads the non-test Go files of the public packages under root.
func scan(root string) (surface, error) {
	s := surface{names: map[string]int{}, fields: map[string]int{}}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			n := info.Name()
			if p != root && (strings.HasPrefix(n, ".") || skipped[n]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil || f.Name.Name == "main" {
			return nil
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(p))
		s.file(filepath.ToSlash(pkg), f)
		return nil
	})
	return s, err
}

// file counts the exported names and fields of f, of package pkg.
func (s *surface) file(pkg string, f *ast.File) {
	internal := internalImports(f)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || recvExported(d.Recv)) {
				s.names[pkg]++
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					if !sp.Name.IsExported() {
						continue
					}
					s.names[pkg]++
					if sp.Assign.IsValid() {
						if path := internalRef(sp.Type, internal); path != "" {
							s.aliases = append(s.aliases, pkg+"."+sp.Name.Name+" = "+path)
						}
					}
					if st, ok := sp.Type.(*ast.StructType); ok {
						s.fields[pkg] += exportedFields(st)
					}
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						if n.IsExported() {
							s.names[pkg]++
						}
					}
				}
			}
		}
	}
}

// exportedFields counts the exported fields of st, embedded ones too.
func exportedFields(st *ast.StructType) int {
	n := 0
	for _, fl := range st.Fields.List {
		if len(fl.Names) == 0 {
			if embeddedName(fl.Type).IsExported() {
				n++
			}
			continue
		}
		for _, name := range fl.Names {
			if name.IsExported() {
				n++
			}
		}
	}
	return n
}

// embeddedName is the field name of an embedded field of type t.
func embeddedName(t ast.Expr) *ast.Ident {
	switch t := t.(type) {
	case *ast.StarExpr:
		return embeddedName(t.X)
	case *ast.SelectorExpr:
		return t.Sel
	case *ast.IndexExpr:
		return embeddedName(t.X)
	case *ast.IndexListExpr:
		return embeddedName(t.X)
	case *ast.Ident:
		return t
	}
	return ast.NewIdent("_")
}

// internalImports maps the names under which f imports internal packages
// to their paths.
func internalImports(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, im := range f.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		if !strings.Contains("/"+path+"/", "/internal/") {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		out[name] = path
	}
	return out
}

// internalRef returns the first type of an internal package that t names
// ("internal/store.Info"), or "".
func internalRef(t ast.Expr, internal map[string]string) string {
	found := ""
	ast.Inspect(t, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && found == "" {
			if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] != "" {
				found = internal[x.Name] + "." + sel.Sel.Name
			}
		}
		return found == ""
	})
	return found
}

// recvExported reports whether a method's receiver type is exported.
func recvExported(fl *ast.FieldList) bool {
	return embeddedName(fl.List[0].Type).IsExported()
}
