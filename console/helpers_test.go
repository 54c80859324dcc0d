package console_test

import (
	"github.com/overtake/overtake/internal/testworker"

	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

func TestMain(m *testing.M) { testredis.Main(m) }

const testToken = "s3cret-token"

// env is a console of a fresh queue served by an httptest server.
type env struct {
	t   *testing.T
	ctx context.Context
	q   *queue.Client
	c   *console.Console
	srv *httptest.Server
}

// newEnv serves a console of a queue on b (miniredis when b is nil).
func newEnv(t *testing.T, b *testredis.Backend, opts console.Options) *env {
	t.Helper()
	return newEnvOf(t, b, queue.Config{}, opts)
}

// newEnvOf is newEnv with a queue configured as cfg (its Namespace and
// Name are set here).
func newEnvOf(t *testing.T, b *testredis.Backend, cfg queue.Config, opts console.Options) *env {
	t.Helper()
	if b == nil {
		b = &testredis.Backends(t)[0]
	}
	cfg.Namespace, cfg.Name = b.Prefix, "q"
	q, err := queue.New(b.Client, cfg)
	require.NoError(t, err)
	if opts.LiveInterval == 0 {
		opts.LiveInterval = 50 * time.Millisecond
	}
	c, err := console.New(q, opts)
	require.NoError(t, err)
	srv := httptest.NewServer(c)
	t.Cleanup(func() { _ = c.Close(); srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &env{t: t, ctx: ctx, q: q, c: c, srv: srv}
}

// get fetches path and returns the status and body.
func (e *env) get(path string) (int, string) {
	e.t.Helper()
	res, err := http.Get(e.srv.URL + path)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return res.StatusCode, string(b)
}

// post sends form to path with extra headers, not following redirects.
func (e *env) post(path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := cl.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// enqueue enqueues a task and returns its ID.
func (e *env) enqueue(typ, payload string, level int, opts ...queue.Option) string {
	e.t.Helper()
	tk, err := e.q.Enqueue(e.ctx, queue.NewTask(typ, []byte(payload)), append(opts, queue.Level(level))...)
	require.NoError(e.t, err)
	return tk.ID
}

// kill makes a dead letter of a new task and returns its ID.
func (e *env) kill(typ, payload, reason string) string {
	e.t.Helper()
	id := e.enqueue(typ, payload, 2)
	w := testworker.New(e.q, "w")
	leased, err := w.LeaseOne(e.ctx, 0)
	require.NoError(e.t, err)
	require.Equal(e.t, id, leased.ID)
	require.NoError(e.t, w.DeadLetter(e.ctx, leased, reason))
	return id
}
