// Command staleref reports comments that name something that does not
// exist: a file (.go, .md, .lua, .sh, .yml, .yaml) not in the repository,
// a test, benchmark, fuzz target or example not declared in it, or a Go
// name (pkg.Name, Type.Method, Name(), a backquoted identifier, a doc
// link [Name]) declared neither in the repository's Go code nor in the
// standard library, and not reachable through an import of a dependency
// (whose names are accepted unchecked). It reads the comments of every
// non-generated .go file under the root and of every .lua file.
//
// Names in scripts/staleref/allow.txt are accepted as they are; that file
// says why each one is there. make lint runs the command and fails on any
// finding, printed as file:line.
//
//	go run ./scripts/staleref [root]
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	allow, err := readAllow(filepath.Join(root, "scripts", "staleref", "allow.txt"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "staleref:", err)
		os.Exit(2)
	}
	res, err := check(root, allow)
	if err != nil {
		fmt.Fprintln(os.Stderr, "staleref:", err)
		os.Exit(2)
	}
	for _, f := range res.findings {
		fmt.Println(f)
	}
	if n := len(res.findings); n > 0 {
		fmt.Fprintf(os.Stderr, "staleref: %d comment references name nothing that exists (rename them or drop them)\n", n)
		os.Exit(1)
	}
	fmt.Printf("comment references (scripts/staleref): %d files read, none stale\n", res.files)
}
