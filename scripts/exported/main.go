// Command exported counts the exported identifiers of Overtake's public
// packages and prints them per package: top-level names and methods of
// exported types (the count of the API issue, target ≤ 200), and beside
// it the same with exported struct fields. internal/, cmd/, examples/,
// e2e/, bench/ and scripts/ are left out. make lint runs it.
//
//	go run ./scripts/exported [root]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// limit is the API issue's target for exported names.
const limit = 200

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	counts := map[string]int{}
	fields := map[string]int{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			n := info.Name()
			if p != root && (strings.HasPrefix(n, ".") || n == "internal" || n == "cmd" || n == "examples" || n == "bench" || n == "e2e" || n == "scripts" || n == "testdata") {
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
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || recvExported(d.Recv)) {
					counts[pkg]++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							counts[pkg]++
							if st, ok := s.Type.(*ast.StructType); ok {
								for _, fl := range st.Fields.List {
									for _, n := range fl.Names {
										if n.IsExported() {
											fields[pkg]++
										}
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								counts[pkg]++
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "exported:", err)
		os.Exit(1)
	}
	keys := []string{}
	tot, totFields := 0, 0
	for k, v := range counts {
		keys = append(keys, k)
		tot += v
		totFields += v + fields[k]
	}
	sort.Strings(keys)
	fmt.Printf("%-26s %5s %12s\n", "package", "names", "with fields")
	for _, k := range keys {
		fmt.Printf("%-26s %5d %12d\n", k, counts[k], counts[k]+fields[k])
	}
	fmt.Printf("%-26s %5d %12d exported identifiers (target: names <= %d)\n", "total", tot, totFields, limit)
	if tot > limit {
		fmt.Fprintf(os.Stderr, "exported: %d exported names, over the limit of %d\n", tot, limit)
		os.Exit(1)
	}
}

func recvExported(fl *ast.FieldList) bool {
	t := fl.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
