package main

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// typeInfo is what one declared type offers after a dot: its fields,
// methods and interface methods, and the types it embeds or aliases.
type typeInfo struct {
	members map[string]bool
	embeds  []string // module type names whose members it shares
	open    bool     // embeds or aliases a type outside the module
}

// index is everything declared in the repository that a comment may name.
type index struct {
	files    map[string]bool            // slash paths relative to the root
	bases    map[string]bool            // base names of files
	pkgs     map[string]map[string]bool // package name -> top-level names
	types    map[string][]*typeInfo     // type name -> declarations
	funcs    map[string]bool            // functions and methods
	idents   map[string]bool            // every identifier in Go code
	vars     map[string]bool            // names declared as variables, parameters or fields
	words    map[string]bool            // words of string literals and Lua code
	extPkgs  map[string]bool            // names under which a dependency is imported
	extNames map[string]bool            // Name of every dependency.Name used in code
	modPaths []string                   // module paths of the go.mod files
	modDirs  map[string]string          // go.mod directory -> module path
	pathPkg  map[string]string          // import path -> package name
	goFiles  []*goFile
	luaFiles []string
	std      *stdlib
}

// goFile is one parsed Go file and the import names it declares.
type goFile struct {
	rel     string
	fset    *token.FileSet
	ast     *ast.File
	imports map[string]string // name -> import path
}

var wordRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// build walks root and indexes it.
func build(root string) (*index, error) {
	ix := &index{
		files: map[string]bool{}, bases: map[string]bool{}, pkgs: map[string]map[string]bool{},
		types: map[string][]*typeInfo{}, funcs: map[string]bool{}, idents: map[string]bool{}, vars: map[string]bool{},
		words: map[string]bool{}, extPkgs: map[string]bool{}, extNames: map[string]bool{},
		modDirs: map[string]string{}, pathPkg: map[string]string{}, std: newStdlib(),
	}
	var goPaths []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == ".git" {
			return nil
		}
		ix.files[rel] = true
		ix.bases[d.Name()] = true
		skip := false
		for _, part := range strings.Split(path.Dir(rel), "/") {
			if part == "testdata" || part == "vendor" || part == "node_modules" || (strings.HasPrefix(part, ".") && part != ".") {
				skip = true
			}
		}
		switch {
		case skip:
		case d.Name() == "go.mod":
			if mp := modulePath(p); mp != "" {
				ix.modPaths = append(ix.modPaths, mp)
				ix.modDirs[path.Dir(rel)] = mp
			}
		case strings.HasSuffix(rel, ".go"):
			goPaths = append(goPaths, rel)
		case strings.HasSuffix(rel, ".lua"):
			ix.luaFiles = append(ix.luaFiles, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, rel := range goPaths {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if ast.IsGenerated(f) {
			continue
		}
		gf := &goFile{rel: rel, fset: fset, ast: f, imports: map[string]string{}}
		ix.goFiles = append(ix.goFiles, gf)
		if ip := ix.importPath(path.Dir(rel)); ip != "" && !strings.HasSuffix(f.Name.Name, "_test") {
			ix.pathPkg[ip] = f.Name.Name
		}
	}
	for _, gf := range ix.goFiles {
		for _, im := range gf.ast.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := importName(p)
			if im.Name != nil {
				name = im.Name.Name
			}
			gf.imports[name] = p
			if !ix.inModule(p) && !isStd(p) {
				ix.extPkgs[name] = true
			}
		}
		ix.addFile(gf)
	}
	for _, rel := range ix.luaFiles {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if i := strings.Index(l, "--"); i >= 0 {
				l = l[:i]
			}
			ix.addWords(l)
		}
	}
	return ix, nil
}

// modulePath reads the module line of a go.mod file.
func modulePath(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// importPath is the import path of the package in directory dir.
func (ix *index) importPath(dir string) string {
	for d := dir; ; d = path.Dir(d) {
		if mp, ok := ix.modDirs[d]; ok {
			rest := strings.TrimPrefix(strings.TrimPrefix(dir, d), "/")
			if d == "." {
				rest = strings.TrimPrefix(dir, ".")
			}
			return strings.TrimSuffix(mp+"/"+rest, "/")
		}
		if d == "." || d == "/" {
			return ""
		}
	}
}

// inModule reports whether import path p is a package of the repository.
func (ix *index) inModule(p string) bool {
	for _, mp := range ix.modPaths {
		if p == mp || strings.HasPrefix(p, mp+"/") {
			return true
		}
	}
	return false
}

// importName guesses the package name of an import path the way most
// paths are spelled: the last element, skipping a major-version suffix
// and a go- prefix or -go suffix (github.com/redis/go-redis/v9: redis).
func importName(p string) string {
	parts := strings.Split(p, "/")
	n := parts[len(parts)-1]
	if len(parts) > 1 && regexp.MustCompile(`^v[0-9]+$`).MatchString(n) {
		n = parts[len(parts)-2]
	}
	n = strings.TrimPrefix(n, "go-")
	n = strings.TrimSuffix(strings.TrimSuffix(n, "-go"), ".go")
	return strings.ReplaceAll(n, "-", "_")
}

func (ix *index) addWords(s string) {
	for _, w := range wordRE.FindAllString(s, -1) {
		ix.words[w] = true
	}
}

func (ix *index) typ(name string) *typeInfo {
	t := &typeInfo{members: map[string]bool{}}
	ix.types[name] = append(ix.types[name], t)
	return t
}

// addFile indexes the declarations and identifiers of one Go file.
func (ix *index) addFile(gf *goFile) {
	f := gf.ast
	top := ix.pkgs[f.Name.Name]
	if top == nil {
		top = map[string]bool{}
		ix.pkgs[f.Name.Name] = top
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			ix.funcs[d.Name.Name] = true
			if d.Recv == nil {
				top[d.Name.Name] = true
			} else if r := recvName(d.Recv.List[0].Type); r != "" {
				ix.typ(r).members[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					top[s.Name.Name] = true
					ix.addType(gf, ix.typ(s.Name.Name), s.Type)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						top[n.Name] = true
					}
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			ix.idents[n.Name] = true
		case *ast.Field:
			ix.addNames(n.Names)
		case *ast.ValueSpec:
			ix.addNames(n.Names)
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				ix.addVars(n.Lhs...)
			}
		case *ast.RangeStmt:
			ix.addVars(n.Key, n.Value)
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				ix.addWords(n.Value)
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if p, ok := gf.imports[x.Name]; ok && !ix.inModule(p) {
					ix.extNames[n.Sel.Name] = true
				}
			}
		}
		return true
	})
}

// addVars records the identifiers among es as variable names.
func (ix *index) addVars(es ...ast.Expr) {
	for _, e := range es {
		if id, ok := e.(*ast.Ident); ok {
			ix.vars[id.Name] = true
		}
	}
}

// addNames records names as variable names.
func (ix *index) addNames(ids []*ast.Ident) {
	for _, id := range ids {
		ix.vars[id.Name] = true
	}
}

// addType records the members a type expression gives to t.
func (ix *index) addType(gf *goFile, t *typeInfo, e ast.Expr) {
	switch e := e.(type) {
	case *ast.StructType:
		for _, fl := range e.Fields.List {
			for _, n := range fl.Names {
				t.members[n.Name] = true
			}
			if len(fl.Names) == 0 {
				ix.embed(gf, t, fl.Type)
			}
		}
	case *ast.InterfaceType:
		for _, m := range e.Methods.List {
			for _, n := range m.Names {
				t.members[n.Name] = true
			}
			if len(m.Names) == 0 {
				ix.embed(gf, t, m.Type)
			}
		}
	default:
		ix.embed(gf, t, e) // type T U or type T = U: lenient, U's members count
	}
}

// embed makes t share the members of the named type e refers to.
func (ix *index) embed(gf *goFile, t *typeInfo, e ast.Expr) {
	switch x := e.(type) {
	case *ast.StarExpr:
		ix.embed(gf, t, x.X)
	case *ast.IndexExpr:
		ix.embed(gf, t, x.X)
	case *ast.IndexListExpr:
		ix.embed(gf, t, x.X)
	case *ast.Ident:
		t.members[x.Name] = true // an embedded field is named after its type
		t.embeds = append(t.embeds, x.Name)
	case *ast.SelectorExpr:
		t.members[x.Sel.Name] = true
		if p, ok := x.X.(*ast.Ident); ok && ix.inModule(gf.imports[p.Name]) {
			t.embeds = append(t.embeds, x.Sel.Name)
		} else {
			t.open = true
		}
	}
}

// recvName is the type name of a method receiver.
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// hasMember reports whether a module type named typ has member m, through
// its embedded and aliased types too; open is true when one of them lies
// outside the module, so that any member may exist.
func (ix *index) hasMember(typ, m string) (found, open bool) {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, t := range ix.types[n] {
			found = found || t.members[m]
			open = open || t.open
			for _, e := range t.embeds {
				walk(e)
			}
		}
	}
	walk(typ)
	return found, open
}
