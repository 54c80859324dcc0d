package console

import (
	"context"
	"crypto/subtle"
	"net/http"
	"regexp"

	"go.uber.org/zap"

	"github.com/overtake/overtake/queue"
)

// actionFunc performs one action from a parsed POST form; done names it
// for the page it returns to (see dones).
type actionFunc func(ctx context.Context, r *http.Request) (done string, err error)

// maxForm bounds an action's body.
const maxForm = 16 << 10

// action checks that actions are enabled and the token is right, then
// runs fn and sends the browser back to the page it came from (303).
// Cross-origin requests never get here (CrossOriginProtection).
func (c *Console) action(fn actionFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.opts.AllowActions {
			c.fail(w, r, &httpError{Code: http.StatusForbidden,
				Msg: "actions are disabled: this console is read-only (start it with --actions, or set Options.AllowActions)"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, badRequest("cannot read the form: %v", err))
			return
		}
		tok := r.Header.Get(HeaderToken)
		if tok == "" {
			tok = r.PostForm.Get("token")
		}
		if tok == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(c.opts.Token)) != 1 {
			c.fail(w, r, &httpError{Code: http.StatusUnauthorized,
				Msg: "missing or wrong token: actions need the console's token (X-Overtake-Token header or token field)"})
			return
		}
		done, err := fn(r.Context(), r)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		c.log.Info("console: action", zap.String("action", r.URL.Path), zap.String("done", done),
			zap.String("level", r.PostForm.Get("level")), zap.String("id", r.PostForm.Get("id")))
		back := backTo(r.PostForm.Get("back"))
		sep := "?"
		if hasQuery.MatchString(back) {
			sep = "&"
		}
		// A relative Location: right under any mount prefix.
		w.Header().Set("Location", back+sep+"done="+done)
		w.WriteHeader(http.StatusSeeOther)
	}
}

var (
	// safeBack are the pages an action may return to: a relative path of
	// this console with a plain query.
	safeBack = regexp.MustCompile(`^(\./|[a-z]+)(\?[A-Za-z0-9=&%_.-]*)?$`)
	hasQuery = regexp.MustCompile(`\?.`)
)

func backTo(s string) string {
	if s == "" || !safeBack.MatchString(s) {
		return "./"
	}
	if s[len(s)-1] == '?' {
		s = s[:len(s)-1]
	}
	return s
}

// doPause pauses (op pause or preempt) or resumes (op resume) a level or,
// with level "all", every level.
func (c *Console) doPause(ctx context.Context, r *http.Request) (string, error) {
	lvl := queue.AllLevels
	if r.PostForm.Get("level") != "all" {
		l, err := c.levelParam(r.PostForm, "level")
		if err != nil {
			return "", err
		}
		lvl = l
	}
	switch op := r.PostForm.Get("op"); op {
	case "pause":
		return "pause", c.q.Pause(ctx, lvl, queue.PauseWait)
	case "preempt":
		return "pause", c.q.Pause(ctx, lvl, queue.PausePreempt)
	case "resume":
		return "resume", c.q.Resume(ctx, lvl)
	default:
		return "", badRequest("op=%q: want pause, preempt or resume", op)
	}
}

func (c *Console) taskID(r *http.Request) (string, error) {
	id := r.PostForm.Get("id")
	if id == "" || len(id) > 512 {
		return "", badRequest("id: want a task ID of 1 to 512 bytes")
	}
	return id, nil
}

func (c *Console) doRequeue(ctx context.Context, r *http.Request) (string, error) {
	id, err := c.taskID(r)
	if err != nil {
		return "", err
	}
	opts := queue.RequeueDeadOptions{ResetCheckpoint: r.PostForm.Get("reset") == "1"}
	return "requeue", c.q.RequeueDead(ctx, id, opts)
}

// doCancel cancels a task (Client.Cancel) and names what it did: a
// waiting task is canceled ("cancel"), a running one has its cancel
// requested ("cancel-requested"), one whose handler succeeded first is
// done ("cancel-late").
func (c *Console) doCancel(ctx context.Context, r *http.Request) (string, error) {
	id, err := c.taskID(r)
	if err != nil {
		return "", err
	}
	if err := c.q.Cancel(ctx, id); err != nil {
		return "", err
	}
	t, err := c.q.Inspect(ctx, id)
	switch {
	case err != nil: // not retained (Config.Retention): it was canceled
		return "cancel", nil
	case t.State == queue.StateActive:
		return "cancel-requested", nil
	case t.State == queue.StateDone:
		return "cancel-late", nil
	}
	return "cancel", nil
}

func (c *Console) doDelete(ctx context.Context, r *http.Request) (string, error) {
	id, err := c.taskID(r)
	if err != nil {
		return "", err
	}
	return "delete", c.q.DeleteDead(ctx, id)
}
