package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/handlers"
	"github.com/overtake/overtake/internal/testbrowser"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/queue"
)

// The cancel buttons in a real browser over a real runtime, on miniredis
// and on a real Redis: without the token nothing is sent; with it, a
// running task's handler sees handlers.ErrCanceled and the task ends
// canceled, a scheduled one is canceled from its page, and the feed lists
// both. The screenshots go to the test's artifact directory.
func TestBrowserCancel(t *testing.T) {
	chromium(t)
	for _, b := range testredis.Backends(t) {
		name := "real"
		if b.IsMini() {
			name = "miniredis"
		}
		t.Run(name, func(t *testing.T) {
			// Retention keeps the canceled records for the pages to show.
			f := newFleet(t, &b, queue.Config{Retention: time.Hour}, 1, console.Options{})
			ctx := f.browser
			state := func(id string) queue.State {
				tk, err := f.q.Inspect(f.ctx, id)
				if err != nil {
					return ""
				}
				return tk.State
			}

			// A running task: its row has a Cancel button.
			run := f.enqueue("long", "", 0)
			require.Equal(t, run, recv(t, f.longStarted, "the long task to start"))
			browse(t, ctx, "open the running page", chromedp.Navigate(f.consoleBase+"running"))
			waitText(t, ctx, "#live", 5*time.Second, run, "Cancel")
			screenshot(t, ctx, t.ArtifactDir(), "running-cancel.png", testbrowser.Width, 400)

			// Without the token the form is not sent: the field asks for it,
			// and a request without it is refused.
			// The live part is replaced as the run time ticks: click in one
			// step of the page's own, not by a node found a moment before.
			clickCancel := `document.querySelector('#live button.cancel').click()`
			eval[any](t, ctx, clickCancel)
			require.True(t, eval[bool](t, ctx, `document.getElementById('token').classList.contains('need')`))
			status := eval[int](t, ctx, `fetch('cancel', {method: 'POST', body: new URLSearchParams({id: '`+run+`'})}).then(r => r.status)`,
				chromedp.EvalAwaitPromise)
			require.Equal(t, http.StatusUnauthorized, status)
			require.Equal(t, queue.StateActive, state(run))
			require.Empty(t, f.longStopped, "a refused cancel reached the handler")

			// With it, the handler's context is cancelled with ErrCanceled
			// and the task ends canceled.
			browse(t, ctx, "type the token", chromedp.SendKeys(chromedp.ID("token"), testToken))
			eval[any](t, ctx, clickCancel)
			require.ErrorIs(t, recv(t, f.longStopped, "the handler to see the cancel"), handlers.ErrCanceled)
			waitText(t, ctx, "p.done", 5*time.Second, "ancel")
			note := textOf(ctx, "p.done")
			require.True(t, strings.HasPrefix(note, "Cancel requested") || strings.HasPrefix(note, "Canceled"), note)
			require.Eventually(t, func() bool { return state(run) == queue.StateCanceled }, 10*time.Second, 20*time.Millisecond)
			waitText(t, ctx, "#live", 5*time.Second, "Nothing is running.")
			browse(t, ctx, "open the canceled task", chromedp.Navigate(f.consoleBase+"task?id="+run))
			waitText(t, ctx, "dl.record", 5*time.Second, "canceled", "while it ran on "+f.rt.WorkerID(), "its handler returned", "Runs\n1 ·")
			require.Zero(t, eval[int](t, ctx, `document.querySelectorAll('button.cancel').length`), "a canceled task has no Cancel button")

			// A scheduled task, from its page.
			later := f.enqueue("quick", "", 1, queue.ProcessIn(time.Hour))
			browse(t, ctx, "open the scheduled task", chromedp.Navigate(f.consoleBase+"task?id="+later))
			waitText(t, ctx, "dl.record", 5*time.Second, "scheduled", "Cancel")
			browse(t, ctx, "cancel it", chromedp.Click(chromedp.CSS("button.cancel")))
			waitText(t, ctx, "main", 5*time.Second, "Canceled: the task will not run.")
			waitText(t, ctx, "dl.record .badge", time.Second, "canceled")
			waitText(t, ctx, "dl.record", time.Second, "while it waited: it never ran", "Runs\n0 ·")
			require.Equal(t, queue.StateCanceled, state(later))
			screenshot(t, ctx, t.ArtifactDir(), "task-canceled.png", testbrowser.Width, 700)
			require.Empty(t, f.quickRan, "a canceled task ran")

			// The feed lists both, newest first.
			browse(t, ctx, "open the feed", chromedp.Navigate(f.consoleBase+"feed"))
			waitText(t, ctx, "#live", 5*time.Second, "Canceled", run, later, "running on", "waiting")
			require.Less(t, strings.Index(textOf(ctx, "#live"), later), strings.Index(textOf(ctx, "#live"), run))
			screenshot(t, ctx, t.ArtifactDir(), "feed-canceled.png", testbrowser.Width, 700)
			require.EqualValues(t, 1, f.rt.Stats().Canceled)
		})
	}
}
