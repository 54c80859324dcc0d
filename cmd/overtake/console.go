package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/overtake/overtake/console"
	"github.com/overtake/overtake/queue"
)

// envConsoleToken is the environment variable an action token may come
// from (else console makes one up and prints it).
const envConsoleToken = "OVERTAKE_CONSOLE_TOKEN"

// consoleOptions are the flags of the console command.
type consoleOptions struct {
	addr          string
	listenAny     bool
	allowedHosts  string   // the --allowed-hosts flag
	hosts         []string // the names answered besides localhost and IP addresses
	actions       bool
	jaeger        string
	jaegerService string
	demo          bool
}

// cmdConsole serves the web console of a queue until interrupted.
func cmdConsole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("console", "[--addr 127.0.0.1:8090] [--allowed-hosts names] [--actions] [--demo] [flags]", stderr)
	rf := addRedisFlags(fs)
	var o consoleOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8090", "address to serve on (a loopback address unless --listen-any; port 0 picks a free one)")
	fs.BoolVar(&o.listenAny, "listen-any", false, "allow --addr to be a non-loopback address: anyone who reaches it reads the queue")
	fs.StringVar(&o.allowedHosts, "allowed-hosts", "", "comma-separated host names the console answers besides localhost, "+
		"IP addresses and --addr's name (this host's DNS name, a proxy's; * for any): other names get 421, "+
		"so that no web page can read the console through DNS rebinding")
	fs.BoolVar(&o.actions, "actions", false, "enable pause, resume, requeue, delete and cancel; they need the token printed at start (or $"+envConsoleToken+")")
	fs.StringVar(&o.jaeger, "jaeger", os.Getenv(envJaegerQuery), "base URL of a Jaeger UI: task IDs link to their traces (default $"+envJaegerQuery+")")
	fs.StringVar(&o.jaegerService, "jaeger-service", "", "service.name of the workers, searched in Jaeger")
	fs.BoolVar(&o.demo, "demo", false, "run over an embedded Redis with the demo's workload looping (ignores the Redis flags)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	if err := checkListen(o.addr, o.listenAny); err != nil {
		return err
	}
	if o.hosts, err = consoleHosts(o.addr, o.allowedHosts); err != nil {
		return err
	}
	if o.demo {
		q, stop, err := startConsoleDemo(ctx, stderr)
		if err != nil {
			return err
		}
		serr := serveConsole(ctx, q, o, stdout)
		return errors.Join(serr, stop())
	}
	if _, err := rf.config(); err != nil {
		return err
	}
	return withQueue(ctx, rf, func(q *queue.Client) error { return serveConsole(ctx, q, o, stdout) })
}

// checkListen refuses an address that is not loopback, unless anyHost is set.
func checkListen(addr string, anyHost bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("--addr %q: %v", addr, err)
	}
	if anyHost || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	what := host
	if host == "" {
		what = "every interface"
	}
	return usageErr("--addr %q listens on %s, not a loopback address: the console shows task payloads; "+
		"add --listen-any if you mean it (and put it behind authentication)", addr, what)
}

// consoleHosts returns the host names the console answers besides
// localhost and IP addresses (console.Options.AllowedHosts): those of
// --allowed-hosts and the name in --addr, if it is one.
func consoleHosts(addr, allowed string) ([]string, error) {
	var hosts []string
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && host != "localhost" && net.ParseIP(host) == nil {
		hosts = append(hosts, host)
	}
	if allowed == "" {
		return hosts, nil
	}
	for _, h := range strings.Split(allowed, ",") {
		h = strings.TrimSpace(h)
		if h == "" || strings.ContainsAny(h, ":/[] ") {
			return nil, usageErr("--allowed-hosts %q: want host names separated by commas, "+
				"without scheme or port (\"console.example.com,ops-1\"), or *", allowed)
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// serveConsole serves the console of q on o.addr until ctx ends.
func serveConsole(ctx context.Context, q *queue.Client, o consoleOptions, stdout io.Writer) error {
	opts := console.Options{AllowActions: o.actions, JaegerURL: o.jaeger, JaegerService: o.jaegerService,
		AllowedHosts: o.hosts}
	tokenFrom := ""
	if o.actions {
		opts.Token, tokenFrom = os.Getenv(envConsoleToken), "$"+envConsoleToken
		if opts.Token == "" {
			var b [16]byte
			_, _ = rand.Read(b[:])
			opts.Token, tokenFrom = hex.EncodeToString(b[:]), ""
		}
	}
	c, err := console.New(q, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		_ = c.Close()
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "overtake console of queue %q: http://%s/\n", q.Name(), ln.Addr())
	switch {
	case len(o.hosts) > 0:
		fmt.Fprintf(stdout, "answers localhost, IP addresses and %s (other host names get 421)\n", strings.Join(o.hosts, ", "))
	case o.listenAny:
		fmt.Fprintln(stdout, "answers localhost and IP addresses only: give the names it is reached by with --allowed-hosts")
	}
	switch {
	case !o.actions:
		fmt.Fprintln(stdout, "read-only: start with --actions to pause, resume, requeue, delete and cancel")
	case tokenFrom != "":
		fmt.Fprintf(stdout, "actions enabled; the token is %s\n", tokenFrom)
	default:
		fmt.Fprintf(stdout, "actions enabled; token: %s\n", opts.Token)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-done:
	}
	_ = c.Close() // ends the live streams, so that Shutdown need not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && serveErr == nil {
		serveErr = err
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}
