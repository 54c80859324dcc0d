package main

import (
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func TestMaskURL(t *testing.T) {
	for in, want := range map[string]string{
		"redis://user:s3cret@host:6379/0":           "redis://user:****@host:6379/0",
		"rediss://:s3cret@host":                     "rediss://:****@host",
		"redis://host:6379":                         "redis://host:6379",
		"redis://user@host:6379":                    "redis://user@host:6379",
		`parse "redis://:p@ss@h:x": invalid port`:   `parse "redis://:****@h:x": invalid port`,
		"a redis://:one@h1 and rediss://u:two@h2 b": "a redis://:****@h1 and rediss://u:****@h2 b",
	} {
		if got := maskURL(in); got != want {
			t.Errorf("maskURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// The password never appears in any output, whether it comes from the URL
// or from REDIS_PASSWORD, and whatever fails.
func TestPasswordNeverPrinted(t *testing.T) {
	const secret = "hunter2-Zq9"
	m := miniredis.RunT(t)
	m.RequireAuth(secret)
	t.Setenv(envRedisURL, "")
	t.Setenv(envRedisPassword, "")
	openQueues(t, redis.NewClient(&redis.Options{Addr: m.Addr(), Password: secret}), "default")

	check := func(name string, wantCode int, args ...string) {
		t.Helper()
		out, errOut, code := runCLI(t, args...)
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d; stderr %q", name, code, wantCode, errOut)
		}
		if strings.Contains(out+errOut, secret) {
			t.Errorf("%s: password printed:\nstdout %q\nstderr %q", name, out, errOut)
		}
		if wantCode != 0 && strings.Contains(errOut, "://") && !strings.Contains(errOut, "****") && strings.Contains(strings.Join(args, " "), secret) {
			t.Errorf("%s: URL printed without the mask: %q", name, errOut)
		}
	}
	check("good password in URL", 0, "stats", "--redis", "redis://:"+secret+"@"+m.Addr())
	check("unreachable server", 1, "stats", "--redis", "redis://user:"+secret+"@127.0.0.1:1")
	check("bad port", 2, "stats", "--redis", "redis://:"+secret+"@127.0.0.1:notaport")
	check("bad scheme", 2, "stats", "--redis", "http://:"+secret+"@127.0.0.1:1")
	check("bad database", 2, "stats", "--redis", "redis://:"+secret+"@127.0.0.1:1/x")
	check("cluster list", 1, "stats", "--redis", "redis://:"+secret+"@127.0.0.1:1,127.0.0.1:2")
	check("no password", 1, "stats", "--redis", "redis://"+m.Addr())

	t.Setenv(envRedisPassword, secret)
	check("REDIS_PASSWORD", 0, "stats", "--redis", m.Addr())
	check("REDIS_PASSWORD, bad port", 2, "stats", "--redis", "redis://127.0.0.1:notaport")
	t.Setenv(envRedisPassword, "wrong")
	check("wrong password", 1, "stats", "--redis", "redis://"+m.Addr())

	t.Setenv(envRedisPassword, "")
	t.Setenv(envRedisURL, "redis://:"+secret+"@"+m.Addr())
	check("REDIS_URL", 0, "stats")
	check("REDIS_URL, enqueue", 0, "enqueue", "--type", "x")
	check("REDIS_URL in -h", 0, "stats", "-h")
}
