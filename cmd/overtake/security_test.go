package main

import (
	"strings"
	"testing"

	"github.com/overtake/overtake/internal/testredis"
)

// The CLI works through an ACL user limited to its namespace, over plain
// TCP and over TLS (rediss:// with --redis-ca), and never prints the
// password, not even when it is wrong.
func TestCLIWithACLAndTLS(t *testing.T) {
	s := testredis.StartSecure(t, "sec")
	urls := map[string][]string{
		"redis":  {"--redis", "redis://" + s.User + ":" + s.Password + "@" + s.Addr()},
		"rediss": {"--redis", "rediss://" + s.User + ":" + s.Password + "@" + s.TLSAddr, "--redis-ca", s.CAFile},
	}
	for name, conn := range urls {
		t.Run(name, func(t *testing.T) {
			args := func(a ...string) []string { return append(append(a, conn...), "--namespace", "sec") }
			out, errOut, code := runCLI(t, args("enqueue", "--type", "email", "--level", "high")...)
			if code != 0 {
				t.Fatalf("enqueue: exit %d, stderr %q", code, errOut)
			}
			id := enqueuedID.FindStringSubmatch(out)[1]
			out, errOut, code = runCLI(t, args("inspect", id)...)
			if code != 0 || !strings.Contains(out, "email") {
				t.Fatalf("inspect: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if _, errOut, code = runCLI(t, args("stats")...); code != 0 {
				t.Fatalf("stats: exit %d, stderr %q", code, errOut)
			}
			// Outside its namespace the user is refused, and says so.
			_, errOut, code = runCLI(t, append(append([]string{"stats"}, conn...), "--namespace", "other")...)
			if code != 1 || !strings.Contains(errOut, "NOPERM") {
				t.Fatalf("other namespace: exit %d, stderr %q", code, errOut)
			}
			// A wrong password fails without printing it.
			bad := strings.Replace(strings.Join(conn, " "), s.Password, "wrong-pass-42", 1)
			out, errOut, code = runCLI(t, append([]string{"stats"}, strings.Fields(bad)...)...)
			if code != 1 || strings.Contains(out+errOut, "wrong-pass-42") || strings.Contains(out+errOut, s.Password) {
				t.Fatalf("wrong password: exit %d, output %q", code, out+errOut)
			}
		})
	}
	// rediss:// without the CA: the server's certificate is not trusted.
	_, errOut, code := runCLI(t, "stats", "--redis", "rediss://"+s.User+":"+s.Password+"@"+s.TLSAddr)
	if code != 1 || !strings.Contains(errOut, "certificate") || strings.Contains(errOut, s.Password) {
		t.Fatalf("untrusted TLS: exit %d, stderr %q", code, errOut)
	}
}
