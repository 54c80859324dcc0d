package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// The JSON of Jaeger's query API, GET /api/traces?service=... (the model
// the Jaeger UI reads). OTLP span events arrive as logs whose "event" field
// is the event's name; the parent is a CHILD_OF reference, links are
// FOLLOWS_FROM references; span kind and status are the tags span.kind,
// otel.status_code and error.
type jaegerResponse struct {
	Data   []jaegerTrace `json:"data"`
	Errors []struct {
		Msg string `json:"msg"`
	} `json:"errors"`
}

type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

type jaegerProcess struct {
	ServiceName string `json:"serviceName"`
}

type jaegerSpan struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []jaegerRef `json:"references"`
	StartTime     int64       `json:"startTime"`
	Tags          []jaegerKV  `json:"tags"`
	Logs          []jaegerLog `json:"logs"`
	ProcessID     string      `json:"processID"`
	Warnings      []string    `json:"warnings"` // e.g. Jaeger's clock-skew adjuster's
}

type jaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerKV struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type jaegerLog struct {
	Timestamp int64      `json:"timestamp"`
	Fields    []jaegerKV `json:"fields"`
}

// kvs returns key/values as strings (numbers and booleans printed).
func kvs(list []jaegerKV) map[string]string {
	m := make(map[string]string, len(list))
	for _, kv := range list {
		m[kv.Key] = fmt.Sprint(kv.Value)
	}
	return m
}

func (s jaegerSpan) tag(key string) string { return kvs(s.Tags)[key] }

// events returns the span's events (logs) in order, each as its fields;
// the name is under "event".
func (s jaegerSpan) events() []map[string]string {
	out := make([]map[string]string, len(s.Logs))
	for i, l := range s.Logs {
		out[i] = kvs(l.Fields)
	}
	return out
}

func (s jaegerSpan) eventNames() []string {
	var names []string
	for _, e := range s.events() {
		names = append(names, e["event"])
	}
	return names
}

// event returns the fields of the only event called name, failing otherwise.
func (s jaegerSpan) event(t *testing.T, name string) map[string]string {
	t.Helper()
	var found []map[string]string
	for _, e := range s.events() {
		if e["event"] == name {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("span %s %s: %d %q events, want 1 (events: %v)", s.OperationName, s.SpanID, len(found), name, s.eventNames())
	}
	return found[0]
}

// refs returns the span's references of type typ ("CHILD_OF", "FOLLOWS_FROM").
func (s jaegerSpan) refs(typ string) []jaegerRef {
	var out []jaegerRef
	for _, r := range s.References {
		if r.RefType == typ {
			out = append(out, r)
		}
	}
	return out
}

// jaegerClient reads traces from Jaeger's query API.
type jaegerClient struct {
	base string
	http *http.Client
}

func newJaegerClient(base string) *jaegerClient {
	return &jaegerClient{base: base, http: &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}}
}

// traces returns the traces of service stored in the last hour.
func (c *jaegerClient) traces(service string) ([]jaegerTrace, error) {
	q := url.Values{"service": {service}, "lookback": {"1h"}, "limit": {"100"}}
	resp, err := c.http.Get(c.base + "/api/traces?" + q.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body jaegerResponse
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET /api/traces: HTTP %d: %w", resp.StatusCode, err)
	}
	if len(body.Errors) > 0 {
		return nil, fmt.Errorf("GET /api/traces: HTTP %d: %v", resp.StatusCode, body.Errors)
	}
	return body.Data, nil
}

// trace returns the trace with the ID id (GET /api/traces/<id>); an error
// while Jaeger does not hold it.
func (c *jaegerClient) trace(id string) (jaegerTrace, error) {
	resp, err := c.http.Get(c.base + "/api/traces/" + url.PathEscape(id))
	if err != nil {
		return jaegerTrace{}, err
	}
	defer resp.Body.Close()
	var body jaegerResponse
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return jaegerTrace{}, fmt.Errorf("GET /api/traces/%s: HTTP %d: %w", id, resp.StatusCode, err)
	}
	if len(body.Errors) > 0 || len(body.Data) != 1 {
		return jaegerTrace{}, fmt.Errorf("GET /api/traces/%s: HTTP %d: %d traces, errors %v", id, resp.StatusCode, len(body.Data), body.Errors)
	}
	return body.Data[0], nil
}
