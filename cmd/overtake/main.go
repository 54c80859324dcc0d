package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// command is one subcommand: it parses its own flags from args and writes
// its results to stdout, its diagnostics to stderr.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"demo", "run a self-contained demo of priorities and preemption (embedded Redis)", cmdDemo},
	{"enqueue", "enqueue one task", cmdEnqueue},
	{"queues", "list the queues of a namespace with their depths per level", cmdQueues},
	{"stats", "show each level's state, depth, waits and rates, and the live workers (--watch: live)", cmdStats},
	{"pause", "pause a level or the whole queue: workers stop leasing from it", cmdPause},
	{"resume", "resume a paused level or the whole queue", cmdResume},
	{"inspect", "show every field of one task, with its checkpoint and result", cmdInspect},
	{"cancel", "cancel tasks by ID: a waiting one at once, a running one when its handler returns", cmdCancel},
	{"dead", "list, requeue or delete dead-lettered tasks", cmdDead},
	{"console", "serve a web view of the queue and the fleet on 127.0.0.1, preemptions live (--demo: embedded)", cmdConsole},
}

// errUsage reports bad command-line usage; the exit status is 2.
var errUsage = errors.New("usage error")

func main() {
	// go-redis logs connection retries on its own; the commands report
	// errors themselves, masked.
	redis.SetLogger(quietLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args to a subcommand and returns the exit status: 0 on
// success, 1 on failure, 2 on bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	// The connection and queue flags may come before the command
	// ("overtake --queue media dead list"): they are passed on to it.
	common := flag.NewFlagSet("overtake", flag.ContinueOnError)
	addRedisFlags(common)
	name, rest, err := splitCommand(common, args)
	if err != nil {
		fmt.Fprintf(stderr, "overtake: %s\n\n", mask(err.Error()))
		usage(stderr)
		return 2
	}
	if name == "help" {
		usage(stdout)
		return 0
	}
	args = append([]string{name}, rest...)
	for _, c := range commands {
		if c.name != name {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "overtake %s: %s\n", name, message(err))
			return 2
		default:
			fmt.Fprintf(stderr, "overtake %s: %s\n", name, message(err))
			return 1
		}
	}
	fmt.Fprintf(stderr, "overtake: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, "Overtake: a Redis priority task queue that preempts low-priority work for urgent tasks.\n\n")
	fmt.Fprint(w, "Usage: overtake [flags] <command> [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nEvery command but demo connects to Redis with --redis, or $"+envRedisURL+" (default "+defaultRedisURL+");\n")
	fmt.Fprint(w, "a password not in the URL comes from $"+envRedisPassword+". Passwords are never printed.\n")
	fmt.Fprint(w, "--queue and --namespace default to $"+envQueue+" and $"+envNamespace+".\n")
	fmt.Fprint(w, "The levels and classes of a queue are read from Redis (overtake queues lists them).\n")
	fmt.Fprint(w, "The connection and queue flags (--redis, --redis-ca, --namespace, --queue)\n")
	fmt.Fprint(w, "may come before or after the command and its subcommand.\n")
	fmt.Fprint(w, "Run 'overtake <command> -h' for the flags of a command.\n")
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("overtake "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(stderr, fs, name, synopsis)
	return fs
}

// parse parses flags that may come before, between or after positional
// arguments ("inspect ID --redis URL"), and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// splitCommand returns the first positional argument of args (a command
// or subcommand name) and the other arguments in their order, so that flags
// may come before the name as well as after it. fs tells which flags take
// a value; a flag before the name that fs does not define is an error, as
// its value cannot be told from the name. A "--" before the name ends the
// flags and is dropped.
func splitCommand(fs *flag.FlagSet, args []string) (name string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 == len(args) {
				break
			}
			return args[i+1], append(slices.Clip(args[:i]), args[i+2:]...), nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return a, append(slices.Clip(args[:i]), args[i+1:]...), nil
		}
		fname, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(fname)
		switch {
		case f == nil:
			return "", nil, fmt.Errorf("flag %s before the command: only %s may come before it", a, flagNames(fs))
		case hasValue || isBoolFlag(f):
		case i+1 == len(args):
			return "", nil, fmt.Errorf("flag %s needs a value", a)
		default:
			i++ // the flag's value
		}
	}
	return "", nil, errNoCommand
}

// errNoCommand: splitCommand found only flags.
var errNoCommand = errors.New("no command given")

// isBoolFlag reports whether f is a flag given without a value (-v).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagNames lists the flags of fs: "--a, --b".
func flagNames(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if !hiddenFlags[f.Name] {
			names = append(names, "--"+f.Name)
		}
	})
	return strings.Join(names, ", ")
}

// quietLogger drops go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// usageErr returns an error with exit status 2.
func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}
