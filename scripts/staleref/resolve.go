package main

import (
	"fmt"
	"strings"
)

// resolve reports whether a Go name written in a comment of gf (nil for a
// Lua comment) exists, and if it does not, why. chain is Name, pkg.Name,
// Type.Member, pkg.Type.Member or variable.member.
func (c *checker) resolve(gf *goFile, chain string) (bool, string) {
	parts := strings.Split(chain, ".")
	x := parts[0]
	if len(parts) == 1 {
		if c.known(x) || c.ix.pkgs[x] != nil || c.ix.types[x] != nil || c.ix.std.isPkg(x) {
			return true, ""
		}
		return false, "declared nowhere in the repository"
	}
	y := parts[1]
	if p, ok := c.importOf(gf, x); ok {
		switch {
		case c.ix.inModule(p):
			return c.modPkg(c.ix.pathPkg[p], parts)
		case isStd(p):
			if c.ix.std.has(stdName(p), y) {
				return true, ""
			}
			return false, fmt.Sprintf("package %s has no %s", p, y)
		default:
			return true, "" // a dependency's names are not checked
		}
	}
	switch {
	case c.ix.pkgs[x] != nil && x != "main":
		if ok, why := c.modPkg(x, parts); ok || gf == nil || gf.ast.Name.Name != x {
			return ok, why
		}
		return c.variable(parts) // in package x, x.Name may be a variable named x
	case c.ix.extPkgs[x]:
		return true, ""
	case c.ix.std.isPkg(x):
		if c.ix.std.has(x, y) {
			return true, ""
		}
		if c.ix.vars[x] {
			return c.variable(parts) // a variable named like the package
		}
		return false, fmt.Sprintf("package %s has no %s", x, y)
	case isUpper(x[0]):
		switch {
		case c.ix.types[x] != nil:
		case c.ix.extNames[x]:
			return true, "" // a type of a dependency or the standard library
		case c.known(x):
			return c.variable(parts) // a field such as Config.Preemption
		default:
			return false, "no package or type " + x
		}
		return c.member(x, y)
	}
	return c.variable(parts)
}

// variable checks x.member.member... for a variable x: each member must
// occur somewhere in the code.
func (c *checker) variable(parts []string) (bool, string) {
	for _, p := range parts[1:] {
		if !c.known(p) {
			return false, "no field, method or name " + p // x is a variable
		}
	}
	return true, ""
}

// known reports whether name occurs in the repository's code at all: as
// a Go identifier, a word of a string literal (Lua scripts, keys), a Lua
// name, or a Go keyword or predeclared name. ALL_CAPS names (Redis
// commands, environment variables) are never flagged.
func (c *checker) known(name string) bool {
	return predeclared[name] || c.ix.idents[name] || c.ix.words[name] || capsRE.MatchString(name)
}

// importOf is the import path gf imports under the name x.
func (c *checker) importOf(gf *goFile, x string) (string, bool) {
	if gf == nil {
		return "", false
	}
	p, ok := gf.imports[x]
	return p, ok
}

// modPkg checks pkg.Name and pkg.Type.Member against the module's packages
// named pkg (and the standard library package of that name, if any).
func (c *checker) modPkg(pkg string, parts []string) (bool, string) {
	y := parts[1]
	if !c.ix.pkgs[pkg][y] {
		if c.ix.std.has(pkg, y) {
			return true, ""
		}
		return false, fmt.Sprintf("package %s declares no %s", pkg, y)
	}
	if len(parts) >= 3 && c.ix.types[y] != nil {
		return c.member(y, parts[2])
	}
	return true, ""
}

// member checks Type.Member for a type the module declares.
func (c *checker) member(typ, m string) (bool, string) {
	found, open := c.ix.hasMember(typ, m)
	if found || open || c.ix.extNames[typ] {
		return true, ""
	}
	return false, fmt.Sprintf("type %s has no field or method %s", typ, m)
}

// isStd reports whether an import path belongs to the standard library:
// its first element has no dot.
func isStd(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}

// stdName is the package name of a standard library import path.
func stdName(p string) string {
	parts := strings.Split(p, "/")
	n := parts[len(parts)-1]
	if len(parts) > 1 && len(n) > 1 && n[0] == 'v' && strings.Trim(n[1:], "0123456789") == "" {
		n = parts[len(parts)-2]
	}
	return n
}
