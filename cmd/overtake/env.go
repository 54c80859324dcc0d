package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// envOr returns the environment variable name, or def when it is unset
// or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// hiddenFlags are flags that still work but are left out of every help
// text: --levels and --classes are deprecated, as the shape of a queue is
// read from Redis (docs/operations.md says when they still matter).
var hiddenFlags = map[string]bool{"levels": true, "classes": true}

// printFlags prints the flags of fs as fs.PrintDefaults does, without the
// hidden ones.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(w)
	fs.VisitAll(func(f *flag.Flag) {
		if hiddenFlags[f.Name] {
			return
		}
		shown.Var(f.Value, f.Name, f.Usage)
		shown.Lookup(f.Name).DefValue = f.DefValue
	})
	shown.PrintDefaults()
}

// usageFunc returns the Usage of a command's flag set fs: its synopsis,
// then its flags without the hidden ones.
func usageFunc(w io.Writer, fs *flag.FlagSet, name, synopsis string) func() {
	return func() {
		fmt.Fprintf(w, "Usage: overtake %s %s\n\nFlags:\n", name, synopsis)
		printFlags(w, fs)
	}
}
