package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/queue"
)

// A read-only console refuses every action.
func TestActionsReadOnly(t *testing.T) {
	e := newEnv(t, nil, console.Options{})
	for _, p := range []string{"/pause", "/requeue", "/delete", "/cancel"} {
		res, body := e.post(p, url.Values{"token": {"x"}, "level": {"0"}, "op": {"pause"}, "id": {"x"}}, nil)
		require.Equal(t, http.StatusForbidden, res.StatusCode, p)
		require.Contains(t, body, "read-only")
	}
	paused, err := e.q.Paused(e.ctx)
	require.NoError(t, err)
	require.Empty(t, paused)
	code, body := e.get("/")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, `action="pause"`)
}

// Actions need the token, are refused cross-origin, and come back to
// the page they were sent from.
func TestActionsTokenAndOrigin(t *testing.T) {
	e := newEnv(t, nil, console.Options{AllowActions: true, Token: testToken})
	pause := url.Values{"level": {"high"}, "op": {"pause"}, "back": {"./"}}
	res, body := e.post("/pause", pause, nil)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.Contains(t, body, "missing or wrong token")
	res, _ = e.post("/pause", pause, map[string]string{console.HeaderToken: "wrong"})
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	res, _ = e.post("/pause", pause, map[string]string{console.HeaderToken: testToken, "Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusForbidden, res.StatusCode, "cross-site")
	res, _ = e.post("/pause", pause, map[string]string{console.HeaderToken: testToken, "Origin": "http://evil.example"})
	require.Equal(t, http.StatusForbidden, res.StatusCode, "foreign Origin")
	paused, err := e.q.Paused(e.ctx)
	require.NoError(t, err)
	require.Empty(t, paused, "nothing refused may act")

	res, _ = e.post("/pause", pause, map[string]string{console.HeaderToken: testToken, "Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "./?done=pause", res.Header.Get("Location"))
	paused, err = e.q.Paused(e.ctx)
	require.NoError(t, err)
	require.Equal(t, map[int]queue.PauseMode{2: queue.PauseWait}, paused)
	_, body = e.get("/")
	require.Contains(t, body, `<span class="badge paused">paused</span>`)

	form := url.Values{"level": {"all"}, "op": {"resume"}, "token": {testToken}, "back": {"//evil.example/x"}}
	res, _ = e.post("/pause", form, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "./?done=resume", res.Header.Get("Location"), "an unsafe back goes home")
	paused, err = e.q.Paused(e.ctx)
	require.NoError(t, err)
	require.Empty(t, paused)

	for _, bad := range []url.Values{{"level": {"9"}, "op": {"pause"}}, {"level": {"0"}, "op": {"stop"}}, {"op": {"pause"}}} {
		bad.Set("token", testToken)
		res, _ = e.post("/pause", bad, nil)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "%v", bad)
	}
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+"/pause", nil)
	require.NoError(t, err)
	r2, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = r2.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, r2.StatusCode)
}

// Dead letters are requeued and deleted from the page's forms.
func TestActionsDeadLetters(t *testing.T) {
	e := newEnv(t, nil, console.Options{AllowActions: true, Token: testToken})
	a := e.kill("t", "a", "bad a")
	b := e.kill("t", "b", "bad b")
	_, body := e.get("/dead")
	require.Contains(t, body, `action="requeue"`)
	require.Contains(t, body, "1–2 of 2")

	res, _ := e.post("/requeue", url.Values{"token": {testToken}, "id": {a}, "back": {"dead?offset=0"}}, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "dead?offset=0&done=requeue", res.Header.Get("Location"))
	tk, err := e.q.Inspect(e.ctx, a)
	require.NoError(t, err)
	require.Equal(t, queue.StatePending, tk.State)
	res, _ = e.post("/requeue", url.Values{"token": {testToken}, "id": {a}}, nil)
	require.Equal(t, http.StatusConflict, res.StatusCode, "not dead any more")

	res, _ = e.post("/delete", url.Values{"token": {testToken}, "id": {b}}, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, err = e.q.Inspect(e.ctx, b)
	require.ErrorIs(t, err, queue.ErrTaskNotFound)
	res, _ = e.post("/delete", url.Values{"token": {testToken}, "id": {b}}, nil)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = e.post("/delete", url.Values{"token": {testToken}}, nil)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	_, body = e.get("/dead?done=delete")
	require.Contains(t, body, "Deleted.")
	require.Contains(t, body, "No dead letters.")
}
