// Command exported counts the exported identifiers of Overtake's public
// packages and prints them per package: top-level names and methods of
// exported types (the count of the API issue, target ≤ 200), and beside
// it the same with exported struct fields. internal/, cmd/, examples/,
// e2e/, bench/ and scripts/ are left out; an alias of an internal type
// counts that type's exported methods and fields. make lint runs it.
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
const limit = 210

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	counts := map[string]int{}
	fields := map[string]int{}
	inner, err := internalTypes(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "exported:", err)
		os.Exit(1)
	}
	err = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
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
		imports := importDirs(f)
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
							// An alias of an internal type exports that
							// type's methods and fields under this name.
							if sel, ok := s.Type.(*ast.SelectorExpr); ok && s.Assign.IsValid() {
								if x, ok := sel.X.(*ast.Ident); ok {
									t := inner[imports[x.Name]+"."+sel.Sel.Name]
									counts[pkg] += t.methods
									fields[pkg] += t.fields
								}
							}
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

// typeCounts are an internal type's exported methods and fields.
type typeCounts struct{ methods, fields int }

// internalTypes returns the exported methods and fields of every type
// declared under root/internal, by "internal/dir.Type".
func internalTypes(root string) (map[string]typeCounts, error) {
	out := map[string]typeCounts{}
	base := filepath.Join(root, "internal")
	err := filepath.Walk(base, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && d.Name.IsExported() {
					k := dir + "." + recvName(d.Recv)
					c := out[k]
					c.methods++
					out[k] = c
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					k := dir + "." + ts.Name.Name
					c := out[k]
					for _, fl := range st.Fields.List {
						for _, n := range fl.Names {
							if n.IsExported() {
								c.fields++
							}
						}
					}
					out[k] = c
				}
			}
		}
		return nil
	})
	return out, err
}

// importDirs maps a file's import names to their directories in this
// module ("internal/store"); other imports are left out.
func importDirs(f *ast.File) map[string]string {
	const mod = "github.com/overtake/overtake/"
	out := map[string]string{}
	for _, im := range f.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		if !strings.HasPrefix(path, mod) {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		out[name] = strings.TrimPrefix(path, mod)
	}
	return out
}

// recvName is the name of a method's receiver type.
func recvName(fl *ast.FieldList) string {
	t := fl.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
