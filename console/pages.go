package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"go.uber.org/zap"

	"github.com/overtake/overtake/queue"
)

// viewFunc reads what a page shows, from the page's query.
type viewFunc func(ctx context.Context, q url.Values) (data any, err error)

// pageData is what every page template gets.
type pageData struct {
	View    string // the template: queue, running, feed, pending, dead, task, error
	Queue   string
	Actions bool
	Events  string // the live stream's relative URL; "" for a page that is not live
	Done    string // what the last action did
	Data    any
}

// liveViews are the pages kept up to date over /events.
func (c *Console) liveViews() map[string]viewFunc {
	return map[string]viewFunc{"queue": c.queueView, "running": c.runningView, "feed": c.feedView, "pending": c.pendingView}
}

// httpError is a failure with the status it is reported with.
type httpError struct {
	Code int
	Msg  string
}

func (e *httpError) Error() string { return e.Msg }

func badRequest(format string, a ...any) error {
	return &httpError{Code: http.StatusBadRequest, Msg: fmt.Sprintf(format, a...)}
}

// dones are the notes a page shows after an action (?done=...).
var dones = map[string]string{"pause": "Paused.", "resume": "Resumed.", "requeue": "Requeued.", "delete": "Deleted.",
	"cancel":           "Canceled: the task will not run.",
	"cancel-requested": "Cancel requested: the task ends canceled when its handler returns.",
	"cancel-late":      "Too late to cancel: its handler had already succeeded, and the task is done."}

func (c *Console) page(name string, view viewFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		data, err := view(r.Context(), q)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		pd := pageData{View: name, Queue: c.q.Name(), Actions: c.opts.AllowActions, Done: dones[q.Get("done")], Data: data}
		if _, ok := c.liveViews()[name]; ok {
			lq := url.Values{}
			for k, v := range q {
				if k != "done" {
					lq[k] = v
				}
			}
			lq.Set("view", name)
			pd.Events = "events?" + lq.Encode()
		}
		c.render(w, http.StatusOK, name, pd)
	}
}

// fail reports err as an error page with its status: 4xx for bad input
// and missing tasks, 500 (logged) otherwise.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := http.StatusInternalServerError, "internal error: "+err.Error()
	var he *httpError
	switch {
	case errors.As(err, &he):
		code, msg = he.Code, he.Msg
	case errors.Is(err, queue.ErrTaskNotFound):
		code, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, queue.ErrNotDead), errors.Is(err, queue.ErrTaskFinished):
		code, msg = http.StatusConflict, err.Error()
	case errors.Is(err, queue.ErrInvalidLevel), errors.Is(err, queue.ErrInvalidTask):
		code, msg = http.StatusBadRequest, err.Error()
	default:
		c.log.Warn("console: request failed", zap.String("path", r.URL.Path), zap.Error(err))
	}
	c.render(w, code, "error", pageData{View: "error", Queue: c.q.Name(), Actions: c.opts.AllowActions,
		Data: struct {
			Code   int
			Status string
			Msg    string
		}{code, http.StatusText(code), msg}})
}

func (c *Console) render(w http.ResponseWriter, code int, name string, pd pageData) {
	var buf bytes.Buffer
	if err := c.tmpl[name].ExecuteTemplate(&buf, "layout.html", pd); err != nil {
		c.log.Error("console: render", zap.String("page", name), zap.Error(err))
		http.Error(w, "render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// intParam reads an integer query parameter in lo..hi, def when absent.
func intParam(q url.Values, name string, def, lo, hi int64) (int64, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s=%q: want an integer from %d to %d", name, s, lo, hi)
	}
	return n, nil
}

// levelParam reads a level by number or name.
func (c *Console) levelParam(q url.Values, name string) (int, error) {
	s := q.Get(name)
	if s == "" {
		return 0, badRequest("%s is missing: want a level from 0 to %d or its name", name, c.q.Levels()-1)
	}
	if l, err := c.q.LevelByName(s); err == nil {
		return l, nil
	}
	l, err := strconv.Atoi(s)
	if err != nil || l < 0 || l >= c.q.Levels() {
		return 0, badRequest("%s=%q: want a level from 0 to %d or its name", name, s, c.q.Levels()-1)
	}
	return l, nil
}

// pageSize is how many rows a list page shows.
const pageSize = 50

// maxOffset bounds offsets a list page accepts.
const maxOffset = 1 << 40

// pager links a list page to its neighbours.
type pager struct {
	From, To, Total int64
	Prev, Next      string
}

func newPager(path string, q url.Values, offset, shown, total int64) pager {
	p := pager{Total: total}
	if shown > 0 {
		p.From, p.To = offset+1, offset+shown
	}
	link := func(off int64) string {
		v := url.Values{}
		for k, vs := range q {
			if k != "offset" && k != "done" {
				v[k] = vs
			}
		}
		v.Set("offset", strconv.FormatInt(off, 10))
		return path + "?" + v.Encode()
	}
	if offset > 0 {
		p.Prev = link(max(offset-pageSize, 0))
	}
	if offset+pageSize < total {
		p.Next = link(offset + pageSize)
	}
	return p
}
