package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() { os.Exit(runMain()) }

// runMain is main with an exit code, so that its deferred calls run
// before the process exits.
func runMain() int {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	buf := map[string][]string{} // output of running tests, shown if they fail
	var passed, failed, skipped int
	pkgFailed := false
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		var e event
		if err := json.Unmarshal(in.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, in.Text()) // not an event: pass it through
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "output":
			if e.Test == "" {
				if e.Output != "PASS\n" {
					fmt.Fprint(out, e.Output)
				}
			} else {
				buf[key] = append(buf[key], e.Output)
			}
		case "pass", "skip", "fail":
			if e.Test == "" {
				if e.Action == "fail" {
					pkgFailed = true
				}
				break
			}
			switch e.Action {
			case "pass":
				passed++
			case "skip":
				skipped++
			case "fail":
				failed++
				for _, l := range buf[key] {
					fmt.Fprint(out, l)
				}
			}
			delete(buf, key)
		}
		out.Flush()
	}
	fmt.Fprintf(out, "tests: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if f := os.Getenv("OVERTAKE_TESTSUM_FILE"); f != "" {
		if fh, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintf(fh, "%d %d %d\n", passed, failed, skipped)
			fh.Close()
		}
	}
	if failed > 0 || pkgFailed {
		out.Flush()
		return 1
	}
	return 0
}
