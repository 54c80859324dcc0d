package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/overtake/overtake/internal/testredis"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{}) // as main does
	testredis.Main(m)
}

// runCLI runs the command line with args and returns its output and exit
// status.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestUsage(t *testing.T) {
	_, errOut, code := runCLI(t)
	if code != 2 || !strings.Contains(errOut, "Commands:") {
		t.Fatalf("no args: code %d, stderr %q", code, errOut)
	}
	out, _, code := runCLI(t, "help")
	if code != 0 || !strings.Contains(out, "demo") || !strings.Contains(out, "dead") {
		t.Fatalf("help: code %d, stdout %q", code, out)
	}
	_, errOut, code = runCLI(t, "frobnicate")
	if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: code %d, stderr %q", code, errOut)
	}
	_, errOut, code = runCLI(t, "enqueue", "-h")
	if code != 0 || !strings.Contains(errOut, "--type") && !strings.Contains(errOut, "-type") {
		t.Fatalf("enqueue -h: code %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{
		{"enqueue"},                           // --type missing
		{"enqueue", "--type", "x", "--bogus"}, // unknown flag
		{"inspect"},                           // ID missing
		{"dead"},                              // subcommand missing
		{"dead", "purge"},                     // unknown subcommand
		{"dead", "requeue"},                   // ID missing
		{"demo", "--duration", "10ms"},        // out of range
		{"demo", "--otlp-protocol", "carrier-pigeon"},
		{"stats", "--levels", "0"},
		{"stats", "extra"},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != 2 {
			t.Errorf("%q: code %d, want 2; stderr %q", args, code, errOut)
		}
	}
}

func TestParseInterspersed(t *testing.T) {
	fs := newFlagSet("x", "", &bytes.Buffer{})
	a := fs.String("a", "", "")
	b := fs.Bool("b", false, "")
	pos, err := parse(fs, []string{"one", "--a", "v", "two", "-b", "--", "--three"})
	if err != nil {
		t.Fatal(err)
	}
	if *a != "v" || !*b || strings.Join(pos, ",") != "one,two,--three" {
		t.Fatalf("a=%q b=%v pos=%q", *a, *b, pos)
	}
}
