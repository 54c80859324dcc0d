package console_test

import (
	"hash/crc32"

	"github.com/overtake/overtake/internal/ckpt"

	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testbrowser"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// fleet is a console with actions over a Redis and a real runtime whose
// handlers report what they do.
type fleet struct {
	*env
	rt          *runtime.Runtime
	lowStarted  chan string
	preempted   chan time.Time
	quickRan    chan string
	longStarted chan string
	longStopped chan error // the cause of a long task's context
	failRuns    atomic.Int64
	browser     context.Context
	consoleBase string
}

// newFleet starts a fleet of slots slots on b (a real Redis when nil),
// its queue configured as cfg.
func newFleet(t *testing.T, b *testredis.Backend, cfg queue.Config, slots int, opts console.Options) *fleet {
	t.Helper()
	path := chromium(t)
	if b == nil {
		b = realRedis(t)
	}
	opts.AllowActions, opts.Token = true, testToken
	opts.SampleInterval, opts.LiveInterval = 250*time.Millisecond, 100*time.Millisecond
	f := &fleet{env: newEnvOf(t, b, cfg, opts), lowStarted: make(chan string, 8), preempted: make(chan time.Time, 8),
		quickRan: make(chan string, 64), longStarted: make(chan string, 8), longStopped: make(chan error, 8)}
	mux := handlers.NewMux()
	mux.HandleFunc("low", func(ctx context.Context, tk *queue.TaskInfo) error {
		h, _ := ckpt.FromContext(ctx)
		if tk.Preemptions > 0 {
			return nil // resumed: done at once
		}
		f.lowStarted <- tk.ID
		if err := h.Save(ctx, []byte(`{"step":4}`)); err != nil {
			return err
		}
		<-ctx.Done()
		f.preempted <- time.Now()
		return context.Cause(ctx)
	})
	mux.HandleFunc("urgent", func(context.Context, *queue.TaskInfo) error { return nil })
	mux.HandleFunc("long", func(ctx context.Context, tk *queue.TaskInfo) error {
		f.longStarted <- tk.ID
		<-ctx.Done()
		f.longStopped <- context.Cause(ctx)
		return context.Cause(ctx)
	})
	mux.HandleFunc("quick", func(_ context.Context, tk *queue.TaskInfo) error { f.quickRan <- tk.ID; return nil })
	mux.HandleFunc("report", func(ctx context.Context, _ *queue.TaskInfo) error {
		return handlers.SetResult(ctx, []byte(`{"rows":1200,"file":"report-2026-11.csv"}`))
	})
	mux.HandleFunc("fail", func(context.Context, *queue.TaskInfo) error {
		f.failRuns.Add(1)
		return handlers.SkipRetry(errors.New("fails for good"))
	})
	rt, err := runtime.New(f.q, mux, runtime.Config{Concurrency: slots, HeartbeatInterval: 500 * time.Millisecond,
		PollInterval: 100 * time.Millisecond, GracePeriod: 2 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	require.NoError(t, rt.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	f.rt, f.browser, f.consoleBase = rt, newBrowser(t, path), f.srv.URL+"/"
	return f
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// The console in a real browser over a real runtime on a real Redis.
func TestBrowser(t *testing.T) { browserTour(t, queue.Config{}) }

// TestBrowserSharded is TestBrowser's tour on a queue of three shards
// (issue 31): every page, the live feed's preemption, pause and resume,
// and the actions read and write across the shards; then the queue page
// counts tasks waiting in every shard.
func TestBrowserSharded(t *testing.T) {
	f := browserTour(t, queue.Config{Shards: 3})
	ctx := f.browser
	shards := map[uint32]bool{}
	for i := range 30 {
		id := f.enqueue("quick", fmt.Sprint(i), 0, queue.ProcessIn(time.Hour))
		shards[crc32.ChecksumIEEE([]byte(id))%3] = true // a task's shard: CRC-32 of its ID mod K
	}
	require.Len(t, shards, 3, "the tasks landed in every shard")
	browse(t, ctx, "open the queue page", chromedp.Navigate(f.consoleBase))
	waitText(t, ctx, "#level-0", 5*time.Second, "31") // and the tour's scheduled task
	screenshot(t, ctx, t.ArtifactDir(), "sharded-queue.png", testbrowser.Width, 900)
}

// browserTour is TestBrowser's walk through the console, on a queue
// configured as cfg; it returns the fleet, still running.
func browserTour(t *testing.T, cfg queue.Config) *fleet {
	f := newFleet(t, nil, cfg, 1, console.Options{})
	ctx := f.browser

	// The queue page loads and goes live.
	browse(t, ctx, "open the queue page", chromedp.Navigate(f.consoleBase))
	waitText(t, ctx, "main", 10*time.Second, "Levels", "high", "normal", "low", "1 alive")
	waitText(t, ctx, "#status", 5*time.Second, "live")

	// A preemption shows in the feed within a second.
	browse(t, ctx, "open the feed", chromedp.Navigate(f.consoleBase+"feed"))
	waitText(t, ctx, "#status", 5*time.Second, "live")
	low := f.enqueue("low", "", 0)
	require.Equal(t, low, recv(t, f.lowStarted, "the low task to start"))
	enqueued := time.Now()
	urgent := f.enqueue("urgent", "", 2)
	waitText(t, ctx, "#live", time.Until(enqueued.Add(time.Second)), urgent, "→", low, "high over low")
	t.Logf("preemption shown %v after the urgent task was enqueued", time.Since(enqueued).Round(time.Millisecond))
	recv(t, f.preempted, "the low task to give way")
	waitText(t, ctx, "tr.preemption", 5*time.Second, "saved · seq 1", "after")

	// Pausing a level from the page: shown paused, nothing leased there.
	browse(t, ctx, "pause normal", chromedp.Navigate(f.consoleBase),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.SetValue(chromedp.ID("pause-level"), "1"),
		chromedp.Click(chromedp.ID("pause")))
	waitText(t, ctx, "main", 5*time.Second, "Paused.")
	waitText(t, ctx, "#level-1", 5*time.Second, "paused")
	paused, err := f.q.Paused(f.ctx)
	require.NoError(t, err)
	require.Equal(t, map[int]queue.PauseMode{1: queue.PauseWait}, paused)
	held := f.enqueue("quick", "", 1)
	assert.Never(t, func() bool { return len(f.quickRan) > 0 }, 1500*time.Millisecond, 50*time.Millisecond,
		"a task of a paused level ran")
	waitText(t, ctx, "#level-1", 5*time.Second, "paused")
	browse(t, ctx, "resume normal", chromedp.SetValue(chromedp.ID("pause-level"), "1"), chromedp.Click(chromedp.ID("resume")))
	waitText(t, ctx, "main", 5*time.Second, "Resumed.")
	require.Equal(t, held, recv(t, f.quickRan, "the held task to run after resume"))
	waitText(t, ctx, "#level-1", 5*time.Second, "running")

	// A <script> payload shows as text and never runs.
	const payload = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`
	id := f.enqueue("quick", payload, 0, queue.ProcessIn(time.Hour))
	browse(t, ctx, "open the task", chromedp.Navigate(f.consoleBase+"task?id="+id))
	waitText(t, ctx, "pre.payload", 5*time.Second, payload)
	require.True(t, eval[bool](t, ctx, `window.pwned === undefined && document.querySelectorAll('main script, main img').length === 0`))

	// A completed task's page shows the result its handler stored, though
	// the ack deleted its record.
	id = f.enqueue("report", `{"month":"2026-11"}`, 1)
	require.Eventually(t, func() bool {
		tk, err := f.q.Inspect(context.Background(), id)
		return err == nil && tk.State == queue.StateDone
	}, 10*time.Second, 20*time.Millisecond, "the report task completes")
	browse(t, ctx, "open the completed task", chromedp.Navigate(f.consoleBase+"task?id="+id))
	waitText(t, ctx, "pre.result", 5*time.Second, `{"rows":1200,"file":"report-2026-11.csv"}`)
	waitText(t, ctx, "main", time.Second, "its result is retained for 23h59m more", "done", "41 B stored at", "kept 23h59m more")
	screenshot(t, ctx, t.ArtifactDir(), "task-result.png", testbrowser.Width, 900)

	// A dead letter is requeued from the page (and dies again).
	f.enqueue("fail", "", 1)
	require.Eventually(t, func() bool { return f.failRuns.Load() == 1 && f.deadCount() == 1 }, 10*time.Second, 20*time.Millisecond)
	browse(t, ctx, "requeue the dead letter", chromedp.Navigate(f.consoleBase+"dead"),
		chromedp.Click(chromedp.CSS("button.requeue")))
	waitText(t, ctx, "main", 5*time.Second, "Requeued.")
	require.Eventually(t, func() bool { return f.failRuns.Load() == 2 }, 10*time.Second, 20*time.Millisecond, "the requeued task ran again")

	// Without the token, or from another origin, an action is refused.
	status := eval[int](t, ctx, `fetch('pause', {method: 'POST', body: new URLSearchParams({level: '0', op: 'pause'})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise)
	require.Equal(t, http.StatusUnauthorized, status)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form id=f method=post action="%spause"><input name=token value=%q><input name=level value=0>`+
			`<input name=op value=pause></form><script>document.getElementById('f').submit()</script>`,
			html.EscapeString(f.consoleBase), testToken)
	}))
	defer evil.Close()
	browse(t, ctx, "a foreign page posts to the console", chromedp.Navigate("http://localhost:"+portOf(evil.URL)+"/"))
	waitText(t, ctx, "body", 5*time.Second, "cross-origin request refused")
	paused, err = f.q.Paused(f.ctx)
	require.NoError(t, err)
	require.Empty(t, paused, "a refused action changed nothing")
	return f
}

func (f *fleet) deadCount() int64 {
	st, err := f.q.Stats(f.ctx)
	if err != nil {
		return -1
	}
	var n int64
	for _, l := range st.Levels {
		n += l.Dead
	}
	return n
}

// portOf returns the port of a URL.
func portOf(raw string) string {
	u, _ := url.Parse(raw)
	return u.Port()
}

// DNS rebinding: a page under another site's name that resolves to the
// console's address gets 421 for every read and action, so its script
// reads nothing of the queue; the console's own names (localhost, its
// address, AllowedHosts) serve the pages, live updates included.
func TestBrowserOtherHosts(t *testing.T) {
	path := chromium(t)
	e := newEnv(t, realRedis(t), console.Options{AllowActions: true, Token: testToken, AllowedHosts: []string{"console.example"}})
	ctx := newBrowser(t, path, "evil.example", "console.example")
	port := portOf(e.srv.URL)
	id := e.enqueue("report", "secret-payload", 1, queue.ProcessIn(time.Hour))

	browse(t, ctx, "open the console as evil.example", chromedp.Navigate("http://evil.example:"+port+"/task?id="+id))
	waitText(t, ctx, "body", 5*time.Second, `421 misdirected request: this console does not answer the host name "evil.example"`)
	require.Equal(t, http.StatusMisdirectedRequest, eval[int](t, ctx, `performance.getEntriesByType('navigation')[0].responseStatus`))
	// The rebinding page's own script: same origin as the console's
	// address, so fetch reads whatever the console answers.
	got := eval[string](t, ctx, `Promise.all(['./', 'task?id=`+id+`', 'pending?level=1', 'dead', 'static/app.js', 'events?view=queue']
		.map(p => fetch(p).then(async r => r.status + ((await r.text()).includes('secret-payload') ? ' leaked' : ''))))
		.then(a => a.join(','))`, chromedp.EvalAwaitPromise)
	require.Equal(t, "421,421,421,421,421,421", got)
	status := eval[int](t, ctx, `fetch('pause', {method: 'POST', headers: {'X-Overtake-Token': '`+testToken+`'},
		body: new URLSearchParams({level: '0', op: 'pause'})}).then(r => r.status)`, chromedp.EvalAwaitPromise)
	require.Equal(t, http.StatusMisdirectedRequest, status)
	paused, err := e.q.Paused(e.ctx)
	require.NoError(t, err)
	require.Empty(t, paused, "a misdirected action changed nothing")

	for _, base := range []string{"http://console.example:" + port + "/", "http://localhost:" + port + "/", e.srv.URL + "/"} {
		browse(t, ctx, "open the task at "+base, chromedp.Navigate(base+"task?id="+id))
		waitText(t, ctx, "pre.payload", 5*time.Second, "secret-payload")
		browse(t, ctx, "open the queue page at "+base, chromedp.Navigate(base))
		waitText(t, ctx, "main", 5*time.Second, "Levels", "high", "normal", "low")
		waitText(t, ctx, "#status", 5*time.Second, "live")
	}
}
