package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/internal/testredis"
	"github.com/overtake/overtake/internal/testworker"
	"github.com/overtake/overtake/queue"
)

// The cancel action, by the state of the task, over HTTP, on miniredis
// and on a real Redis: refused without the token, then a waiting task is
// canceled, a running one has its cancel requested, a finished or unknown
// one is an error page.
func TestActionsCancel(t *testing.T) {
	testredis.ForEach(t, func(t *testing.T, b testredis.Backend) {
		e := newEnv(t, &b, console.Options{AllowActions: true, Token: testToken})
		state := func(id string, want queue.State) {
			t.Helper()
			tk, err := e.q.Inspect(e.ctx, id)
			require.NoError(t, err)
			require.Equal(t, want, tk.State, id)
		}
		cancel := func(id, back string, hdr map[string]string) *http.Response {
			t.Helper()
			form := url.Values{"id": {id}, "back": {back}}
			if hdr == nil {
				form.Set("token", testToken)
			}
			res, _ := e.post("/cancel", form, hdr)
			return res
		}
		pend := e.enqueue("t", "", 1)
		// The task page offers the button to a waiting task.
		_, body := e.get("/task?id=" + pend)
		require.Contains(t, body, `action="cancel"`)
		require.Contains(t, body, `name="back" value="task?id=`+pend+`"`)

		// Refused without the token, or with a wrong one: nothing changes.
		res, body := e.post("/cancel", url.Values{"id": {pend}}, nil)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		require.Contains(t, body, "missing or wrong token")
		res = cancel(pend, "", map[string]string{console.HeaderToken: "wrong"})
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		state(pend, queue.StatePending)

		// A pending task is canceled, and the page says so.
		res = cancel(pend, "task?id="+pend, map[string]string{console.HeaderToken: testToken})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "task?id="+pend+"&done=cancel", res.Header.Get("Location"))
		state(pend, queue.StateCanceled)
		_, body = e.get("/task?id=" + pend + "&done=cancel")
		require.Contains(t, body, "Canceled: the task will not run.")
		require.Contains(t, body, `<span class="badge canceled">canceled</span>`)
		require.NotContains(t, body, `action="cancel"`, "no button for a canceled task")
		require.Contains(t, body, "while it waited: it never ran")
		// Again: no error, it is canceled already.
		res = cancel(pend, "", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "./?done=cancel", res.Header.Get("Location"))

		// A scheduled task too.
		later := e.enqueue("t", "", 0, queue.ProcessIn(time.Hour))
		res = cancel(later, "", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		state(later, queue.StateCanceled)

		// A running task: its row on the running page has the button, and
		// its cancel is requested; it ends canceled when its run ends.
		run := e.enqueue("t", "", 2)
		w := testworker.New(e.q, "w1")
		leased, err := w.LeaseOne(e.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, run, leased.ID)
		_, body = e.get("/running")
		require.Contains(t, body, `<th>Actions</th>`)
		require.Contains(t, body, `<input type="hidden" name="id" value="`+run+`"><input type="hidden" name="back" value="running?offset=0">`)
		res = cancel(run, "running?offset=0", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "running?offset=0&done=cancel-requested", res.Header.Get("Location"))
		_, body = e.get("/running?offset=0&done=cancel-requested")
		require.Contains(t, body, "Cancel requested: the task ends canceled when its handler returns.")
		state(run, queue.StateActive)
		_, body = e.get("/task?id=" + run)
		require.Contains(t, body, "<dt>Cancel requested</dt>", "the task page shows the request while it runs")
		// Its handler returned an error: the run ends canceled, not dead.
		require.ErrorContains(t, w.DeadLetter(e.ctx, leased, "context canceled"), "ended canceled")
		state(run, queue.StateCanceled)
		_, body = e.get("/task?id=" + run)
		require.Contains(t, body, `while it ran on <span class="mono">w1</span>`)
		require.NotContains(t, body, "<dt>Cancel requested</dt>", "not once it ended")

		// Finished and unknown tasks, and a bad form, are error pages.
		dead := e.kill("t", "", "bad")
		res, body = e.post("/cancel", url.Values{"token": {testToken}, "id": {dead}}, nil)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, body, "dead")
		state(dead, queue.StateDead)
		res, _ = e.post("/cancel", url.Values{"token": {testToken}, "id": {"nope"}}, nil)
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		res, _ = e.post("/cancel", url.Values{"token": {testToken}, "id": {strings.Repeat("x", 513)}}, nil)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)

		// The counts per level and the feed.
		st, err := e.q.Stats(e.ctx)
		require.NoError(t, err)
		require.Equal(t, []int64{1, 1, 1}, []int64{st.Levels[0].Canceled, st.Levels[1].Canceled, st.Levels[2].Canceled})
		_, body = e.get("/")
		require.Contains(t, body, `<th class="n">Dead</th><th class="n">Canceled</th>`)
		require.Regexp(t, `<tr id="level-2">(.*\n){7}<td class="n">1</td>\n<td class="n">1</td>\n`, body, "high: 1 dead, 1 canceled")
		_, body = e.get("/feed")
		for _, id := range []string{pend, later, run} {
			require.Contains(t, body, `href="task?id=`+id+`"`)
		}
		require.Contains(t, body, `running on <span class="mono">w1</span>`)
	})
}

// A read-only console shows no cancel button.
func TestCancelReadOnly(t *testing.T) {
	e := newEnv(t, nil, console.Options{})
	id := e.enqueue("t", "", 0)
	w := testworker.New(e.q, "w1")
	_, err := w.LeaseOne(e.ctx, 0)
	require.NoError(t, err)
	for _, p := range []string{"/running", "/task?id=" + id} {
		code, body := e.get(p)
		require.Equal(t, http.StatusOK, code, p)
		require.Contains(t, body, id, p)
		require.NotContains(t, body, `action="cancel"`, p)
	}
	res, _ := e.post("/cancel", url.Values{"token": {"x"}, "id": {id}}, nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	tk, err := e.q.Inspect(e.ctx, id)
	require.NoError(t, err)
	require.Equal(t, queue.StateActive, tk.State)
}
