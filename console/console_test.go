package console_test

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/internal/testworker"
	"github.com/overtake/overtake/queue"
)

const xss = `<script>alert("x")</script>`

// Every page renders, and every task field is escaped: a <script>
// payload, type or error shows as text.
func TestPagesEscape(t *testing.T) {
	e := newEnv(t, nil, console.Options{JaegerURL: "http://jaeger.local:16686", JaegerService: "svc"})
	id := e.enqueue(xss, xss, 0)
	dead := e.kill("dead"+xss, xss, "boom "+xss)
	for _, path := range []string{"/", "/running", "/feed", "/pending?level=0", "/pending?level=low", "/dead",
		"/task?id=" + url.QueryEscape(id), "/task?id=" + dead} {
		code, body := e.get(path)
		require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		require.NotContains(t, body, "<script>alert", path)
		require.Contains(t, body, `<script src="static/app.js" defer></script>`, path)
	}
	_, body := e.get("/task?id=" + id)
	require.Contains(t, body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	require.Contains(t, body, "search?lookback=2d&amp;service=svc&amp;tags=%7B%22messaging.message.id%22%3A%22"+id)
	_, body = e.get("/dead")
	require.Contains(t, body, "boom &lt;script&gt;")
	_, body = e.get("/pending?level=0")
	require.Contains(t, body, id)
	for _, p := range []string{"/static/app.js", "/static/app.css"} {
		code, _ := e.get(p)
		require.Equal(t, http.StatusOK, code, p)
	}
}

// Bad input gets a clear 4xx, never a 500.
func TestBadInput(t *testing.T) {
	e := newEnv(t, nil, console.Options{})
	for path, want := range map[string]int{
		"/task":                                http.StatusBadRequest,
		"/task?id=nope":                        http.StatusNotFound,
		"/task?id=" + strings.Repeat("x", 600): http.StatusBadRequest,
		"/pending":                             http.StatusBadRequest,
		"/pending?level=9":                     http.StatusBadRequest,
		"/pending?level=urgent":                http.StatusBadRequest,
		"/pending?level=0&offset=-1":           http.StatusBadRequest,
		"/running?offset=x":                    http.StatusBadRequest,
		"/dead?offset=99999999999999999":       http.StatusBadRequest,
		"/feed?offset=1e3":                     http.StatusBadRequest,
		"/events?view=nope":                    http.StatusBadRequest,
		"/events?view=pending&level=7":         http.StatusBadRequest,
		"/nope":                                http.StatusNotFound,
	} {
		code, body := e.get(path)
		require.Equal(t, want, code, "%s: %s", path, body)
	}
	_, body := e.get("/pending?level=9")
	require.Contains(t, body, "level=&#34;9&#34;: want a level from 0 to 2 or its name")
}

// List pages page through large lists, with bounds.
func TestPagination(t *testing.T) {
	e := newEnv(t, nil, console.Options{})
	tasks := make([]*queue.Task, 120)
	for i := range tasks {
		tasks[i] = queue.NewTask("t", nil)
	}
	infos, err := e.q.EnqueueBatch(e.ctx, tasks, queue.Level(1))
	require.NoError(t, err)
	_, body := e.get("/pending?level=1")
	require.Contains(t, body, "1–50 of 120")
	require.Contains(t, body, `href="pending?level=1&amp;offset=50" rel="next"`, "a link to the next page")
	require.NotContains(t, body, `rel="prev"`)
	require.Contains(t, body, infos[0].ID)
	require.NotContains(t, body, infos[50].ID)
	_, body = e.get("/pending?level=1&offset=100")
	require.Contains(t, body, "101–120 of 120")
	require.Contains(t, body, `href="pending?level=1&amp;offset=50" rel="prev"`)
	require.Contains(t, body, infos[119].ID)
	_, body = e.get("/pending?level=1&offset=5000")
	require.Contains(t, body, "nothing here, 120 in all")
}

// The live stream sends the page's live part at once and again when it
// changes, and ends when the console is closed.
func TestEvents(t *testing.T) {
	e := newEnv(t, nil, console.Options{})
	res, err := http.Get(e.srv.URL + "/events?view=pending&level=0")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waitLine := func(sub string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "stream ended before %q", sub)
				if strings.Contains(l, sub) {
					return
				}
			case <-deadline:
				t.Fatalf("no line with %q", sub)
			}
		}
	}
	waitLine("Nothing is waiting")
	id := e.enqueue("t", "", 0)
	waitLine(id)
	require.NoError(t, e.c.Close())
	for range lines { // Close ends the stream
	}
}

// New refuses actions without a token.
func TestNewOptions(t *testing.T) {
	_, err := console.New(nil, console.Options{})
	require.Error(t, err)
	e := newEnv(t, nil, console.Options{})
	_, err = console.New(e.q, console.Options{AllowActions: true})
	require.ErrorContains(t, err, "Token")
}

// The running page and the task page show the lease that TaskInfo leaves
// out: the worker holding a running task and its lease deadline
// (queue.TaskDetail).
func TestRunningShowsTheLease(t *testing.T) {
	e := newEnv(t, nil, console.Options{})
	id := e.enqueue("render", "{}", 1)
	_, err := testworker.New(e.q, "w-render-7").LeaseOne(e.ctx, 0)
	require.NoError(t, err)
	_, body := e.get("/running")
	require.Contains(t, body, id)
	require.Contains(t, body, `<td class="mono">w-render-7</td>`)
	_, body = e.get("/task?id=" + url.QueryEscape(id))
	require.Contains(t, body, `by <span class="mono">w-render-7</span>`)
	require.Contains(t, body, "lease until")
}

// The task page shows the result a handler stored, escaped, and still
// shows it once the ack deleted the task's record.
func TestTaskPageShowsResult(t *testing.T) {
	e := newEnv(t, nil, console.Options{})
	id := e.enqueue("report", "{}", 1)
	_, body := e.get("/task?id=" + url.QueryEscape(id))
	require.Contains(t, body, "<dt>Result</dt><dd>none stored</dd>")
	w := testworker.New(e.q, "w")
	leased, err := w.LeaseOne(e.ctx, 0)
	require.NoError(t, err)
	require.NoError(t, w.SaveResult(e.ctx, leased, []byte(`{"rows":1200,"note":"`+xss+`"}`)))
	_, body = e.get("/task?id=" + url.QueryEscape(id))
	require.Contains(t, body, `<pre class="result">{&#34;rows&#34;:1200,&#34;note&#34;:&#34;&lt;script&gt;`)
	require.Contains(t, body, `<pre class="payload">`)

	require.NoError(t, w.Ack(e.ctx, leased))
	code, body := e.get("/task?id=" + url.QueryEscape(id))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "The task completed and its record was deleted; its result is retained for 23h59m more.")
	require.Contains(t, body, `<span class="badge">done</span>`)
	require.Contains(t, body, `<pre class="result">{&#34;rows&#34;:1200`)
	require.NotContains(t, body, `<pre class="payload">`, "the payload went with the record")
	require.NotContains(t, body, "<script>alert")
}
