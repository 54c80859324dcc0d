package console

import (
	"encoding/hex"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/overtake/overtake/internal/outcome"
)

// funcs are the templates' helpers; none of them returns unescaped HTML.
var funcs = template.FuncMap{
	"dur":        fmtDur,
	"clock":      fmtClock,
	"bytes":      fmtBytes,
	"rate":       fmtRate,
	"lv":         func(l int) string { return fmt.Sprintf("lv%d", l%6) },
	"tries":      outcome.Attempts,
	"cancelForm": func(id, back string) cancelForm { return cancelForm{ID: id, Back: back} },
}

// cancelForm is what the "cancel" template's form posts: the task and
// the page to come back to.
type cancelForm struct{ ID, Back string }

// backToTask is the back field of an action sent from task id's page, a
// plain query that backTo accepts.
func backToTask(id string) string {
	return "task?id=" + strings.ReplaceAll(url.QueryEscape(id), "+", "%20")
}

// fmtDur rounds d for a person: "850ms", "4.2s", "3m05s", "2h10m".
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// fmtClock is the local time of day with milliseconds; "—" for zero.
func fmtClock(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Local().Format("15:04:05.000")
}

func fmtBytes(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}

// fmtRate is a per-second rate: "0", "0.05/s", "12/s".
func fmtRate(r float64) string {
	switch {
	case r <= 0 || math.IsNaN(r):
		return "0"
	case r < 10:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", r), "0"), ".") + "/s"
	}
	return fmt.Sprintf("%.0f/s", r)
}

// maxShown bounds the bytes of a payload or checkpoint a page shows.
const maxShown = 4096

// shown is user data prepared for a page: text when it is UTF-8, else a
// hex dump; cut to maxShown.
type shown struct {
	Text   string
	Binary bool
	Size   int
	Cut    bool
}

func show(b []byte) shown {
	s := shown{Size: len(b)}
	if len(b) > maxShown {
		b, s.Cut = b[:maxShown], true
	}
	if utf8.Valid(b) || s.Cut && utf8.Valid(b[:max(len(b)-3, 0)]) {
		s.Text = strings.ToValidUTF8(string(b), "�")
		return s
	}
	if len(b) > maxShown/4 {
		b, s.Cut = b[:maxShown/4], true
	}
	s.Text, s.Binary = hex.Dump(b), true
	return s
}

// taskRef is a task ID as pages show it: a link to the task page and,
// with a Jaeger URL, to its traces.
type taskRef struct {
	ID    string
	Trace string
}

func (c *Console) ref(id string) taskRef {
	r := taskRef{ID: id}
	if c.opts.JaegerURL != "" && id != "" {
		r.Trace = jaegerSearch(c.opts.JaegerURL, c.opts.JaegerService, id)
	}
	return r
}

// jaegerSearch returns the URL of a Jaeger UI search for the spans of task
// id (attribute messaging.message.id), in service when not empty.
func jaegerSearch(base, service, id string) string {
	v := url.Values{}
	if service != "" {
		v.Set("service", service)
	}
	tag, _ := jsonString(id)
	v.Set("tags", `{"messaging.message.id":`+tag+`}`)
	v.Set("lookback", "2d")
	return strings.TrimRight(base, "/") + "/search?" + v.Encode()
}

// trimFloat formats v with up to one decimal.
func trimFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}
