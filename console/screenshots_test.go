package console_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/overtake/overtake/checkpoint"
	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testbrowser"
	"github.com/overtake/overtake/queue"
	"github.com/overtake/overtake/runtime"
)

// TestBrowserScreenshots writes the README's screenshots of the console
// (queue page, feed, the queue page on a phone) to $OVERTAKE_CONSOLE_SCREENSHOTS
// after half a minute of a busy 2-slot fleet: steady work at every level
// that checkpoints, now and then an urgent alert that preempts it, and
// now and then a cancel of a waiting or a running task.
// scripts/console-screenshots.sh runs it.
func TestBrowserScreenshots(t *testing.T) {
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		t.Skip(envScreenshots + " unset: no screenshots to take (scripts/console-screenshots.sh sets it)")
	}
	path := chromium(t)
	b := realRedis(t)
	e := newEnv(t, b, console.Options{AllowActions: true, Token: testToken, SampleInterval: 500 * time.Millisecond,
		LiveInterval: 200 * time.Millisecond, JaegerURL: "http://127.0.0.1:16686", JaegerService: "billing-worker"})
	type work struct{ Steps int }
	mux := handlers.NewMux()
	run := func(ctx context.Context, _ *queue.TaskInfo, w work) error {
		cur, err := checkpoint.NewCursor[int](ctx, 0)
		if err != nil {
			return err
		}
		for step := cur.Value(); step < w.Steps; step++ {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(100 * time.Millisecond):
			}
			if err := cur.Set(ctx, step+1); err != nil {
				return err
			}
		}
		return nil
	}
	for _, typ := range []string{"reindex", "export", "email", "invoice", "alert"} {
		handlers.HandleJSON(mux, typ, run)
	}
	e.kill("import", `{"file":"<script>alert(1)</script>.csv"}`, "import: no such file")
	rt, err := runtime.New(e.q, mux, runtime.Config{Concurrency: 2, HeartbeatInterval: 500 * time.Millisecond,
		PollInterval: 100 * time.Millisecond, GracePeriod: time.Second, Logger: zap.NewNop(), WorkerID: "worker-1"})
	require.NoError(t, err)
	require.NoError(t, rt.Start(context.Background()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		types := []string{"reindex", "export", "email"}
		for i := 0; ctx.Err() == nil; i++ {
			l := []int{0, 0, 0, 0, 0, 0, 1}[rng.IntN(7)]
			typ, steps := types[l], 6+rng.IntN(10)
			if i%6 == 5 {
				typ, l, steps = "alert", 2, 3
			}
			p, _ := json.Marshal(work{Steps: steps})
			tk, err := e.q.Enqueue(ctx, queue.NewTask(typ, p), queue.Level(l))
			switch {
			case err != nil:
			case i%11 == 4: // an operator cancels a task that waits
				_ = e.q.Cancel(ctx, tk.ID)
			case i%11 == 9: // and one that runs
				if run, _, err := e.q.RunningDetails(ctx, 0, 1); err == nil && len(run) > 0 {
					_ = e.q.Cancel(ctx, run[0].ID)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(300+rng.IntN(250)) * time.Millisecond):
			}
		}
	})
	bctx := newBrowser(t, path)
	browse(t, bctx, "open the queue page", chromedp.Navigate(e.srv.URL+"/"))
	<-ctx.Done()
	wg.Wait()
	browse(t, bctx, "reload the queue page", chromedp.Navigate(e.srv.URL+"/"))
	waitText(t, bctx, "#status", 5*time.Second, "live")
	waitText(t, bctx, "main", 5*time.Second, "worker-1")
	screenshot(t, bctx, dir, "queue.png", testbrowser.Width, 1200)
	screenshot(t, bctx, dir, "queue-phone.png", 390, 1200)
	browse(t, bctx, "open the feed", chromedp.Navigate(e.srv.URL+"/feed"))
	waitText(t, bctx, "#live", 5*time.Second, "saved · seq", "waiting", "running on worker-1")
	screenshot(t, bctx, dir, "feed.png", testbrowser.Width, 720)
}
