package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// envJaegerQuery holds the base URL of a Jaeger UI (and query API); `make
// jaeger` (scripts/jaeger.sh) prints it.
const envJaegerQuery = "OVERTAKE_JAEGER_QUERY"

// jaegerUIPort is where Jaeger serves its UI and query API by default.
const jaegerUIPort = "16686"

// partTrace is the trace of one part of the demo.
type partTrace struct {
	name string
	id   trace.TraceID
}

// part runs one scenario of the demo under a root span called name, so that
// its producer, every task it enqueues, every run of them and the links
// between runs (a preemptor's to its victim, a resumed run's to the
// preempted one) are one trace: one timeline in Jaeger. The root span ends
// once every run's span has ended.
func (d *demo) part(ctx context.Context, name string, run func(context.Context) error) error {
	ctx, span := d.tr.Start(ctx, name)
	d.traces = append(d.traces, partTrace{name: name, id: span.SpanContext().TraceID()})
	err := run(ctx)
	if err == nil {
		err = d.taken.waitRunsEnded(ctx)
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return err
}

// printTraces prints the trace ID of every part and, when a Jaeger UI is
// known (--jaeger) or found next to the collector, the URL that opens it.
func (d *demo) printTraces(ctx context.Context, collector string) {
	ui := strings.TrimRight(d.opts.Jaeger, "/")
	if ui == "" {
		ui = findJaeger(ctx, collector)
	}
	width := 0
	for _, t := range d.traces {
		width = max(width, len(t.name)+1)
	}
	for _, t := range d.traces {
		d.p.text("  %-*s trace %s\n", width, t.name+":", t.id)
		if ui != "" {
			d.p.text("  %-*s %s/trace/%s\n", width, "", ui, t.id)
		}
	}
	if ui == "" {
		d.p.text("  (paste a trace ID into your tracing UI's search box; --jaeger URL prints links)\n")
	}
}

// jaegerCandidate returns the URL where a Jaeger whose OTLP receiver is
// collector (host:port, or an OTLP endpoint URL) serves its UI by default:
// port 16686 of the same host, when collector uses an OTLP default port.
func jaegerCandidate(collector string) string {
	if strings.Contains(collector, "://") {
		u, err := url.Parse(collector)
		if err != nil {
			return ""
		}
		collector = u.Host
	}
	host, port, err := net.SplitHostPort(collector)
	if err != nil || (port != "4317" && port != "4318") {
		return ""
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, jaegerUIPort)
}

// findJaeger returns the base URL of the Jaeger UI next to collector if
// one answers its query API there within a second, or "".
func findJaeger(ctx context.Context, collector string) string {
	base := jaegerCandidate(collector)
	if base == "" || !isJaeger(ctx, base) {
		return ""
	}
	return base
}

// isJaeger reports whether base serves Jaeger's query API: GET
// /api/services answers 200 with a JSON object holding "data".
func isJaeger(ctx context.Context, base string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/services", nil)
	if err != nil {
		return false
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body map[string]json.RawMessage
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return false
	}
	_, ok := body["data"]
	return ok
}
