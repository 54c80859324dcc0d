package main

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSink is a fake OTLP/HTTP collector that keeps the spans it receives.
type otlpSink struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	res   map[string]string // resource attributes of the last request
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := &colltrace.ExportTraceServiceRequest{}
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range req.ResourceSpans {
		s.res = map[string]string{}
		for _, kv := range rs.Resource.Attributes {
			s.res[kv.Key] = kv.Value.GetStringValue()
		}
		for _, ss := range rs.ScopeSpans {
			s.spans = append(s.spans, ss.Spans...)
		}
	}
	s.mu.Unlock()
	out, _ := proto.Marshal(&colltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// --otlp exports the demo's spans: each part is one trace under its root
// span, with the task type in every span name, and the demo prints the
// trace IDs, and the URLs that open them with --jaeger.
func TestDemoOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	t.Setenv(envJaegerQuery, "")
	sink := &otlpSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	out, errOut, code := runCLI(t, "demo", "--duration", "1s", "--load", "1", "--otlp", addr, "--otlp-protocol", "http",
		"--jaeger", "http://jaeger.test:16686/")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "traces sent to "+addr+" over http") {
		t.Errorf("no telemetry line:\n%s", out)
	}
	printed := map[string]string{}
	for _, m := range regexp.MustCompile(`(demo: [a-z ]+): +trace ([0-9a-f]{32})\n +http://jaeger\.test:16686/trace/([0-9a-f]{32})\n`).FindAllStringSubmatch(out, -1) {
		if m[2] != m[3] {
			t.Errorf("%s: trace %s, link to %s", m[1], m[2], m[3])
		}
		printed[m[1]] = m[2]
	}
	if len(printed) != 2 {
		t.Fatalf("want the trace and link of 2 parts, got %v in:\n%s", printed, out)
	}

	sink.mu.Lock()
	defer sink.mu.Unlock()
	roots := map[string]string{} // trace ID -> root span name
	for _, s := range sink.spans {
		if len(s.ParentSpanId) == 0 {
			roots[hex.EncodeToString(s.TraceId)] = s.Name
		}
	}
	for name, id := range printed {
		if roots[id] != name {
			t.Errorf("printed trace %s for %q; its root span is %q", id, name, roots[id])
		}
	}
	names := map[string]int{}
	for _, s := range sink.spans {
		if _, ok := roots[hex.EncodeToString(s.TraceId)]; !ok || len(roots) != 2 {
			t.Fatalf("span %q is in trace %x, not under one of the 2 roots %v", s.Name, s.TraceId, roots)
		}
		if roots[hex.EncodeToString(s.TraceId)] == "demo: preemption" {
			names[s.Name]++
		}
	}
	// The preemption part: the report runs twice (preempted, resumed), the
	// export and the alert once, in the same trace.
	for name, n := range map[string]int{"process demo/report": 2, "process demo/alert": 1, "process demo/export": 1,
		"enqueue demo/report": 1, "enqueue demo/alert": 1} {
		if names[name] != n {
			t.Errorf("%d %q spans in the preemption trace, want %d (all: %v)", names[name], name, n, names)
		}
	}
	if sink.res["host.name"] == "" || sink.res["service.instance.id"] == "" || sink.res["service.name"] != "overtake-demo" {
		t.Errorf("resource %v lacks host.name, service.instance.id or service.name", sink.res)
	}
}

func TestJaegerCandidate(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:4317":          "http://127.0.0.1:16686",
		"jaeger:4318":             "http://jaeger:16686",
		"http://collector:4317":   "http://collector:16686",
		":4317":                   "http://127.0.0.1:16686",
		"127.0.0.1:9999":          "",
		"no port":                 "",
		"http://[::1]:4318/v1/xx": "http://[::1]:16686",
	} {
		if got := jaegerCandidate(in); got != want {
			t.Errorf("jaegerCandidate(%q) = %q, want %q", in, got, want)
		}
	}
}

// isJaeger accepts what Jaeger's query API answers, and nothing else.
func TestIsJaeger(t *testing.T) {
	jaeger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/services" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"data":["overtake-demo"],"total":1,"limit":0,"offset":0,"errors":null}`)
	}))
	defer jaeger.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "<html>not a jaeger</html>")
	}))
	defer other.Close()
	ctx := context.Background()
	if !isJaeger(ctx, jaeger.URL) {
		t.Error("a Jaeger query API was not recognised")
	}
	if isJaeger(ctx, other.URL) {
		t.Error("an HTML page was taken for Jaeger")
	}
	other.Close()
	if isJaeger(ctx, other.URL) {
		t.Error("a closed port was taken for Jaeger")
	}
}
