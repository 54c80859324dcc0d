package console

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/overtake/overtake/queue"
)

// Options configure a Console. The zero value is a read-only console.
type Options struct {
	// AllowActions enables the POST actions: pause and resume a level,
	// requeue and delete a dead letter, cancel a task. Token must be set
	// then.
	AllowActions bool
	// Token is the secret every action presents, in the X-Overtake-Token
	// header or the token form field.
	Token string
	// JaegerURL is the base URL of a Jaeger UI ("http://127.0.0.1:16686");
	// when set, every task ID links to a search for its spans.
	JaegerURL string
	// JaegerService is the service.name searched in Jaeger (the workers'
	// service name); empty leaves it to the search form.
	JaegerService string
	// Logger reports failed reads and actions; nil logs nothing.
	Logger *zap.Logger
	// SampleInterval is how often the server samples depths and rates for
	// the charts. Default 2s.
	SampleInterval time.Duration
	// History is how far back the charts go. Default 10 minutes.
	History time.Duration
	// LiveInterval is how often a live page is re-rendered and, when it
	// changed, pushed to the browser. Default 500ms.
	LiveInterval time.Duration
	// AllowedHosts are the host names, besides localhost (and names under
	// .localhost) and IP addresses, that a request's Host header may name:
	// "console.example.com", without scheme or port; case and a trailing
	// dot do not matter. A request for any other name, to any page, the
	// static files and the live updates included, is answered 421
	// Misdirected Request, so that a web page whose own name is made to
	// resolve to the console's address (DNS rebinding) cannot read the
	// queue. "*" answers every name (when a proxy in front checks them).
	AllowedHosts []string
}

// HeaderToken is the request header that may carry Options.Token.
const HeaderToken = "X-Overtake-Token"

// Console is an http.Handler that serves the console's pages, live
// updates and actions. Its paths are relative, so it may be mounted under
// a prefix with http.StripPrefix. Close it to stop its sampler and end the
// live streams.
type Console struct {
	q    *queue.Client
	opts Options
	log  *zap.Logger
	mux  *http.ServeMux
	tmpl map[string]*template.Template
	hist *history
	host hostSet // the names it answers (Options.AllowedHosts)

	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	start   sync.Once
	stopped chan struct{}
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// New returns a console of queue q. It starts sampling on its first
// request; call Close when done.
func New(q *queue.Client, opts Options) (*Console, error) {
	if q == nil {
		return nil, errors.New("console: nil queue client")
	}
	if opts.AllowActions && opts.Token == "" {
		return nil, errors.New("console: AllowActions needs a Token")
	}
	hosts, err := newHostSet(opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	if opts.SampleInterval <= 0 {
		opts.SampleInterval = 2 * time.Second
	}
	if opts.History <= 0 {
		opts.History = 10 * time.Minute
	}
	if opts.LiveInterval <= 0 {
		opts.LiveInterval = 500 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Console{q: q, opts: opts, log: opts.Logger, tmpl: tmpl, host: hosts, ctx: ctx, cancel: cancel,
		hist: newHistory(q.Levels(), int(opts.History/opts.SampleInterval)+1), stopped: make(chan struct{})}
	c.routes()
	return c, nil
}

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServer(http.FS(static))))
	m.HandleFunc("GET /{$}", c.page("queue", c.queueView))
	m.HandleFunc("GET /running", c.page("running", c.runningView))
	m.HandleFunc("GET /feed", c.page("feed", c.feedView))
	m.HandleFunc("GET /pending", c.page("pending", c.pendingView))
	m.HandleFunc("GET /dead", c.page("dead", c.deadView))
	m.HandleFunc("GET /task", c.page("task", c.taskView))
	m.HandleFunc("GET /events", c.events)
	actions := http.NewServeMux()
	actions.HandleFunc("POST /pause", c.action(c.doPause))
	actions.HandleFunc("POST /requeue", c.action(c.doRequeue))
	actions.HandleFunc("POST /delete", c.action(c.doDelete))
	actions.HandleFunc("POST /cancel", c.action(c.doCancel))
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
	}))
	guarded := cop.Handler(actions)
	for _, p := range []string{"POST /pause", "POST /requeue", "POST /delete", "POST /cancel"} {
		m.Handle(p, guarded)
	}
	c.mux = m
}

// ServeHTTP serves the console; it starts the sampler on the first call.
// A request whose Host the console does not answer (Options.AllowedHosts)
// gets 421 Misdirected Request.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !c.host.allows(r.Host) {
		misdirected(w, r)
		return
	}
	c.start.Do(func() { go c.sample() })
	c.mux.ServeHTTP(w, r)
}

// Close stops the sampler and ends every live stream. The console serves
// no live updates after it.
func (c *Console) Close() error {
	c.cancel()
	started := true
	c.start.Do(func() { started = false })
	if started {
		<-c.stopped
	}
	return nil
}

func parseTemplates() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, name := range []string{"queue", "running", "feed", "pending", "dead", "task", "error"} {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}
