package console_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/console"
)

// getHost fetches path from the console with the Host header host.
func (e *env) getHost(method, path, host string) (int, string) {
	e.t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(url.Values{"token": {testToken}, "level": {"0"}, "op": {"pause"}}.Encode())
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL+path, body)
	require.NoError(e.t, err)
	req.Host = host
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return res.StatusCode, string(b)
}

// The console answers only localhost, IP addresses and its AllowedHosts:
// a page under another name (DNS rebinding) reads nothing, not even the
// static files or the live updates, and cannot act.
func TestOtherHostsMisdirected(t *testing.T) {
	e := newEnv(t, nil, console.Options{AllowActions: true, Token: testToken, AllowedHosts: []string{"Console.Example"}})
	_, port, err := net.SplitHostPort(e.srv.Listener.Addr().String())
	require.NoError(t, err)
	port = ":" + port
	for _, host := range []string{"evil.example" + port, "evil.example:8091", "evil.example", "console.example.evil.example",
		"localhost.evil.example", "127.0.0.1.evil.example", "[evil]"} {
		for _, path := range []string{"/", "/dead", "/pending?level=0", "/static/app.js", "/events?view=queue"} {
			code, body := e.getHost(http.MethodGet, path, host)
			require.Equal(t, http.StatusMisdirectedRequest, code, "%s %s: %s", host, path, body)
			require.Contains(t, body, "misdirected request: this console does not answer the host name", host)
			require.NotContains(t, body, "<html", host)
		}
		code, _ := e.getHost(http.MethodPost, "/pause", host)
		require.Equal(t, http.StatusMisdirectedRequest, code, host)
	}
	paused, err := e.q.Paused(e.ctx)
	require.NoError(t, err)
	require.Empty(t, paused, "a misdirected action changed nothing")

	for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "LOCALHOST", "app.localhost" + port, "[::1]" + port,
		"[::1]", "10.1.2.3:80", "console.example" + port, "CONSOLE.example.", "console.example"} {
		code, body := e.getHost(http.MethodGet, "/", host)
		require.Equal(t, http.StatusOK, code, "%s: %s", host, body)
		require.Contains(t, body, "<title>queue · q · overtake console</title>", host)
	}
}

// AllowedHosts "*" answers every name; a malformed entry is refused.
func TestAllowedHostsOptions(t *testing.T) {
	e := newEnv(t, nil, console.Options{AllowedHosts: []string{"*"}})
	code, _ := e.getHost(http.MethodGet, "/", "evil.example:8091")
	require.Equal(t, http.StatusOK, code)
	for _, bad := range []string{"", "console.example:8090", "http://console.example", "a/b", ".", "[::1]"} {
		_, err := console.New(e.q, console.Options{AllowedHosts: []string{"ok.example", bad}})
		require.ErrorContains(t, err, "AllowedHosts", "%q", bad)
	}
}
