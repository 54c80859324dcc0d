package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/queue"
)

// lockedBuffer is a bytes.Buffer written by a command while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startConsole runs `overtake console args...` until the test ends and
// returns its base URL and output.
func startConsole(t *testing.T, args ...string) (base string, out *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &lockedBuffer{}
	errOut := &lockedBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"console", "--addr", "127.0.0.1:0"}, args...), out, errOut) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			require.Zero(t, code, "exit status; stderr %s", errOut.String())
		case <-time.After(15 * time.Second):
			t.Error("console did not stop within 15s")
		}
	})
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	require.Eventually(t, func() bool { return url.MatchString(out.String()) }, 10*time.Second, 10*time.Millisecond,
		"no URL printed; stderr %s", errOut.String())
	return url.FindString(out.String()), out
}

// openQueues opens the queues of names in the default namespace on rdb, as
// their producers and workers would (recording their shapes), and closes
// rdb.
func openQueues(t *testing.T, rdb *redis.Client, names ...string) {
	t.Helper()
	defer rdb.Close()
	for _, name := range names {
		_, err := queue.New(rdb, queue.Config{Name: name})
		require.NoError(t, err)
	}
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// console --demo serves the demo's looping workload: preemptions appear in
// the feed; --actions prints a token.
func TestConsoleDemo(t *testing.T) {
	base, out := startConsole(t, "--demo", "--actions")
	require.Regexp(t, `actions enabled; token: [0-9a-f]{32}\n`, out.String())
	code, body := get(t, base)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "<title>queue · demo · overtake console</title>")
	require.Eventually(t, func() bool {
		_, body := get(t, base+"feed")
		return strings.Contains(body, `class="preemption"`) && strings.Contains(body, "saved · seq")
	}, 30*time.Second, 100*time.Millisecond, "no preemption in the demo's feed")
}

// console over an existing Redis, read-only, and with the token from the
// environment (never printed).
func TestConsoleRedis(t *testing.T) {
	m := miniredis.RunT(t)
	openQueues(t, redis.NewClient(&redis.Options{Addr: m.Addr()}), "jobs", "default")
	base, out := startConsole(t, "--redis", "redis://"+m.Addr(), "--queue", "jobs")
	require.Contains(t, out.String(), "read-only")
	code, body := get(t, base+"dead")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "No dead letters.")

	t.Setenv(envConsoleToken, "from-the-env")
	_, out = startConsole(t, "--redis", "redis://"+m.Addr(), "--actions")
	require.Contains(t, out.String(), "the token is $"+envConsoleToken)
	require.NotContains(t, out.String(), "from-the-env")
}

// console refuses a non-loopback address unless --listen-any.
func TestConsoleListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":8090", "192.0.2.1:80", "example.com:80"} {
		_, errOut, code := runCLI(t, "console", "--addr", addr, "--demo")
		require.Equal(t, 2, code, addr)
		require.Contains(t, errOut, "not a loopback address", addr)
	}
	_, errOut, code := runCLI(t, "console", "--addr", "nonsense", "--demo")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--addr")
	for _, addr := range []string{"127.0.0.1:1", "[::1]:1", "localhost:1"} {
		require.NoError(t, checkListen(addr, false), addr)
	}
	require.NoError(t, checkListen("0.0.0.0:1", true))
}

// getHost fetches u with the Host header host.
func getHost(t *testing.T, u, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	req.Host = host
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// console answers localhost, IP addresses, --addr's name and the names of
// --allowed-hosts; any other Host (a DNS rebinding page's) gets 421.
func TestConsoleHosts(t *testing.T) {
	m := miniredis.RunT(t)
	openQueues(t, redis.NewClient(&redis.Options{Addr: m.Addr()}), "default")
	base, out := startConsole(t, "--redis", "redis://"+m.Addr(), "--allowed-hosts", "ops.example, console.example")
	require.Contains(t, out.String(), "answers localhost, IP addresses and ops.example, console.example (other host names get 421)")
	port := base[strings.LastIndex(base, ":")+1 : len(base)-1]
	for host, want := range map[string]int{
		"evil.example:" + port: http.StatusMisdirectedRequest, "evil.example:8091": http.StatusMisdirectedRequest,
		"127.0.0.1:" + port: http.StatusOK, "localhost:" + port: http.StatusOK,
		"ops.example:" + port: http.StatusOK, "console.example": http.StatusOK,
	} {
		code, body := getHost(t, base+"dead", host)
		require.Equal(t, want, code, "%s: %s", host, body)
	}
	base, out = startConsole(t, "--redis", "redis://"+m.Addr())
	code, body := getHost(t, base, "evil.example:8090")
	require.Equal(t, http.StatusMisdirectedRequest, code, "without --allowed-hosts too: %s", body)
	require.NotContains(t, out.String(), "answers")

	hosts, err := consoleHosts("console.lan:8090", "")
	require.NoError(t, err)
	require.Equal(t, []string{"console.lan"}, hosts, "--addr's name")
	hosts, err = consoleHosts("localhost:8090", "a.example,*")
	require.NoError(t, err)
	require.Equal(t, []string{"a.example", "*"}, hosts)
	for _, bad := range []string{"a.example,", "a.example:8090", "http://a.example", "[::1]"} {
		_, errOut, code := runCLI(t, "console", "--allowed-hosts", bad, "--demo")
		require.Equal(t, 2, code, bad)
		require.Contains(t, errOut, "--allowed-hosts", bad)
	}
}
