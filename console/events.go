package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// keepAlive is how often an idle live stream sends a comment, so proxies
// keep it open.
const keepAlive = 15 * time.Second

// events streams a live page as server-sent events: every LiveInterval
// the page's live part is rendered again and, when it changed, sent as a
// "live" event whose data is the HTML (escaped by html/template like the
// page itself). A failed read is sent as a "problem" event.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("view")
	view, ok := c.liveViews()[name]
	if !ok {
		c.fail(w, r, badRequest("view=%q: want queue, running, feed or pending", name))
		return
	}
	q.Del("view")
	// Check the query once, so that bad input is a 4xx, not a stream of
	// problems.
	if _, err := view(r.Context(), q); err != nil {
		c.fail(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 1000\n\n")
	if rc.Flush() != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel) // Close ends the stream
	defer stop()

	tick := time.NewTicker(c.opts.LiveInterval)
	defer tick.Stop()
	var last []byte
	lastSent := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		msg := c.liveMessage(ctx, name, view, q, &last)
		if msg == "" && time.Since(lastSent) >= keepAlive {
			msg = ": keep-alive\n\n"
		}
		if msg == "" {
			continue
		}
		if _, err := fmt.Fprint(w, msg); err != nil || rc.Flush() != nil {
			return
		}
		lastSent = time.Now()
	}
}

// liveMessage renders the live part of a page and returns the event to
// send, "" when it did not change since last.
func (c *Console) liveMessage(ctx context.Context, name string, view viewFunc, q map[string][]string,
	last *[]byte) string {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	data, err := view(rctx, q)
	if err != nil {
		if ctx.Err() != nil {
			return ""
		}
		return sse("problem", "cannot read the queue: "+err.Error())
	}
	var buf bytes.Buffer
	pd := pageData{View: name, Queue: c.q.Name(), Actions: c.opts.AllowActions, Data: data}
	if err := c.tmpl[name].ExecuteTemplate(&buf, "live", pd); err != nil {
		return sse("problem", "render: "+err.Error())
	}
	if bytes.Equal(buf.Bytes(), *last) {
		return ""
	}
	*last = append((*last)[:0], buf.Bytes()...)
	return sse("live", buf.String())
}

// sse formats one event; every line of data gets its own data: field.
func sse(event, data string) string {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	for line := range strings.SplitSeq(strings.ReplaceAll(data, "\r", ""), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return b.String()
}
