package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// FuzzArgs feeds the CLI arbitrary arguments (NUL-separated) against a
// miniredis: it must never panic, must exit 0, 1 or 2, and must say
// something on stderr whenever it fails. The demo is left out (it runs a
// workload of its own, not a parse of its arguments).
func FuzzArgs(f *testing.F) {
	for _, seed := range []string{
		"enqueue\x00--type\x00email\x00--level\x00high",
		"enqueue\x00--type\x00x\x00--max-retries\x00-5",
		"enqueue\x00--type\x00x\x00--levels\x00a,a,b",
		"enqueue\x00--type\x00x\x00--class\x00gold\x00--classes\x00gold=9",
		"enqueue\x00--type\x00x\x00--delay\x00-1s\x00--payload\x00{",
		"stats\x00--levels\x000",
		"inspect\x00",
		"dead\x00list\x00--count\x00-1",
		"dead\x00requeue\x00nope",
		"nope",
		"--help",
	} {
		f.Add(seed)
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(m.Close)
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		if args[0] == "demo" || args[0] == "console" {
			t.Skip("runs a workload, not a parse")
		}
		for _, a := range args {
			if strings.HasPrefix(strings.TrimLeft(a, "-"), "redis") || strings.HasPrefix(strings.TrimLeft(a, "-"), "payload-file") {
				t.Skip("would point the CLI elsewhere than the test's Redis or at a file")
			}
		}
		args = append(args, "--redis", "redis://"+m.Addr())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out, errOut bytes.Buffer
		code := run(ctx, args, &out, &errOut)
		switch code {
		case 0:
		case 1, 2:
			if errOut.Len() == 0 {
				t.Fatalf("%q: exit %d with nothing on stderr", args, code)
			}
		default:
			t.Fatalf("%q: exit %d", args, code)
		}
	})
}
