// Command exported guards the public surface of Overtake's public
// packages. It prints, per package, the exported names (top-level names
// and methods of exported types) and the same with the exported fields of
// their structs, and fails when names and fields together exceed limit,
// or when an exported type is an alias of an internal one (whose fields
// go doc does not show where a user looks). internal/, cmd/, examples/,
// e2e/, bench/ and scripts/ are left out. make lint runs it.
//
//	go run ./scripts/exported [root]
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// limit bounds the exported names and struct fields of the public
// packages: 373 when this guard started counting fields (issue 28), plus
// 17 for the operators' API of package queue: Queues, ReadShape, Shape
// (Schema, LevelNames, Classes) and its Apply, InUse, ErrNoQueue,
// TaskDetail (TaskInfo, Worker, Token, LeaseDeadline, RunSpans),
// InspectDetail and RunningDetails; plus 1 for Client.Check (issue 30:
// runtime.New refuses a periodic task Enqueue would refuse); plus 1 for
// RunStats.UnsavedPreemptions (issue 30: a preempted run that saved no
// checkpoint is counted); plus 3 for runtime's Config.StartTimeout,
// ErrRedisUnreachable and RedisLogger (issue 30: a worker that cannot
// reach Redis fails at start); plus 7 for cancel (issue 29:
// Client.Cancel, ErrTaskFinished, StateCanceled, LevelStats.Canceled,
// FeedCanceled, handlers.ErrCanceled, RunStats.Canceled); plus 1 for
// TaskInfo.CancelRequestedAt (issue 29: Inspect shows a requested cancel);
// plus 2 for shards (issue 31: Config.Shards, Shape.Shards).
const limit = 373 + 17 + 1 + 1 + 3 + 7 + 1 + 2

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	s, err := scan(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "exported:", err)
		os.Exit(1)
	}
	pkgs := make([]string, 0, len(s.names))
	for p := range s.names {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	names, fields := 0, 0
	fmt.Printf("%-26s %5s %6s %6s\n", "package", "names", "fields", "total")
	for _, p := range pkgs {
		fmt.Printf("%-26s %5d %6d %6d\n", p, s.names[p], s.fields[p], s.names[p]+s.fields[p])
		names += s.names[p]
		fields += s.fields[p]
	}
	fmt.Printf("%-26s %5d %6d %6d exported names and fields (limit %d)\n", "total", names, fields, names+fields, limit)
	failed := false
	if len(s.aliases) > 0 {
		fmt.Fprintf(os.Stderr, "exported: aliases of internal types, whose fields go doc does not show:\n\t%s\n",
			strings.Join(s.aliases, "\n\t"))
		failed = true
	}
	if names+fields > limit {
		fmt.Fprintf(os.Stderr, "exported: %d exported names and fields, over the limit of %d\n", names+fields, limit)
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}
