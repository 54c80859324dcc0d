package e2e_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overtake/overtake/internal/testbrowser"
)

// The demo's service name and the task types of its preemption part.
const (
	demoService = "overtake-demo"
	demoVictim  = "demo/report" // low, checkpoints, preempted, resumed
	demoUrgent  = "demo/alert"  // high, preempts the report
	demoBusy    = "demo/export" // normal, keeps the other worker busy
)

// eventsH is the height of the window for the screenshot of the victim's
// events, both runs expanded.
const eventsH = 1200

// The demo's preemption, exported to a real Jaeger that serves the real
// Jaeger UI, looked at in headless Chromium: the trace page shows the task
// types in the span names, the victim's first run shows its preempted,
// checkpoint.saved and requeued events and its second run the resumed
// event, and Jaeger shows no clock-skew warning. With
// OVERTAKE_SCREENSHOTS_DIR set it also writes the README's screenshots
// there (scripts/jaeger-screenshots.sh).
func TestJaegerUI(t *testing.T) {
	grpcAddr, _, query := jaegerEnv(t)
	jaegerUI(t)
	browserPath := chromium(t)
	shots := os.Getenv(envScreenshots)
	if shots != "" {
		require.NoError(t, os.MkdirAll(shots, 0o755))
	}

	traceID, link := runDemoCLI(t, grpcAddr, query)
	require.Equal(t, query+"/trace/"+traceID, link, "the demo prints the URL that opens the trace")
	runs := waitPreemptionTrace(t, newJaegerClient(query), traceID)
	require.Subset(t, runs.first.eventNames(), []string{"checkpoint.saved", "preempted", "requeued"})
	require.Equal(t, "resumed", runs.second.eventNames()[0])
	for _, s := range runs.all {
		require.Empty(t, s.Warnings, "Jaeger's warnings on span %s %s", s.OperationName, s.SpanID)
	}

	ctx := newBrowser(t, browserPath)

	// The search page lists the demo's parts, one trace each.
	search := query + "/search?" + url.Values{"service": {demoService}, "lookback": {"1h"}, "limit": {"20"}}.Encode()
	browse(t, ctx, "open "+search, chromedp.Navigate(search))
	body := waitText(t, ctx, demoService+": demo: preemption", demoService+": demo: priority order")
	require.NotContains(t, body, "clock skew")
	screenshot(t, ctx, shots, "search.png", bottomOf(".SearchTracePage--row", 0))
	// Widen the span name column, as a user would by dragging its edge
	// (the UI keeps the width in localStorage), so names show whole.
	browse(t, ctx, "widen the name column", chromedp.Evaluate[chromedp.Void](
		`localStorage.setItem("spanNameColumnWidth", "0.36")`))

	// The preemption's timeline: one trace, span names with the task types.
	browse(t, ctx, "open the trace", chromedp.Navigate(link))
	body = waitText(t, ctx, "demo: preemption", "process "+demoVictim, "process "+demoUrgent,
		"process "+demoBusy, "enqueue "+demoVictim, "enqueue "+demoUrgent)
	require.NotContains(t, body, "clock skew", "Jaeger warns of clock skew")
	screenshot(t, ctx, shots, "timeline.png", bottomOf(".TraceTimelineViewer", 0))

	// The victim's two runs, expanded by uiFind (their span IDs): the
	// details open with the events (logs) listed. The urgent run matches
	// too: its overtake.victim.span_id is the first run's span ID.
	find := link + "?" + url.Values{"uiFind": {runs.first.SpanID + " " + runs.second.SpanID}}.Encode()
	browse(t, ctx, "open the victim's runs", chromedp.Navigate(find))
	waitText(t, ctx, "process "+demoVictim)
	// Each expanded run lists its events in order, as the query API has them.
	want := [][]string{runs.first.eventNames(), runs.second.eventNames(), runs.urgent.eventNames()}
	require.Equal(t, want, waitEvents(t, ctx, want...), "the events of the victim's runs and the urgent run")
	body = waitText(t, ctx, "preempted", "checkpoint.saved", "requeued", "resumed", "overtake.preempted.by",
		"overtake.reason", "overtake.outcome", "overtake.run.preempted", "overtake.preemptions_before")
	require.NotContains(t, body, "clock skew")
	if shots != "" {
		// Both runs' events in one picture: a taller window, cut below the
		// resumed run's details.
		browse(t, ctx, "resize", chromedp.EmulateViewport(testbrowser.Width, eventsH))
		waitEvents(t, ctx, want...)
		screenshot(t, ctx, shots, "victim-events.png", bottomOf(".detail-info-wrapper", 1))
		browse(t, ctx, "resize", chromedp.EmulateViewport(testbrowser.Width, testbrowser.Height))
	}
}

// runDemoCLI builds cmd/overtake and runs its demo with --otlp to Jaeger;
// it returns the preemption part's trace ID and the link the demo prints.
func runDemoCLI(t *testing.T, grpcAddr, query string) (traceID, link string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "overtake")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/overtake/overtake/cmd/overtake")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/overtake:\n%s", out)

	demo := exec.CommandContext(ctx, bin, "demo", "--otlp", grpcAddr, "--otlp-protocol", "grpc", "--jaeger", query)
	var stderr strings.Builder
	demo.Stderr = &stderr
	out, err = demo.Output()
	require.NoError(t, err, "overtake demo: stderr:\n%s\nstdout:\n%s", stderr.String(), out)
	m := regexp.MustCompile(`demo: preemption: +trace ([0-9a-f]{32})\n +(\S+)\n`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "overtake demo printed no trace and link for its preemption part:\n%s", out)
	t.Logf("demo: preemption: trace %s, %s", m[1], m[2])
	return m[1], m[2]
}

// waitPreemptionTrace waits until Jaeger's query API returns the whole
// preemption trace: the root span, the victim's preempted run and its
// resumed run, and the urgent run.
func waitPreemptionTrace(t *testing.T, jc *jaegerClient, traceID string) preemptionRuns {
	t.Helper()
	var (
		mu      sync.Mutex // the condition runs on its own goroutine
		lastErr error
		names   []string
		runs    preemptionRuns
	)
	complete := func() bool {
		tr, err := jc.trace(traceID)
		mu.Lock()
		defer mu.Unlock()
		lastErr, names, runs = err, nil, preemptionRuns{}
		root := false
		runs.all = tr.Spans
		for _, s := range tr.Spans {
			names = append(names, s.OperationName)
			ev := s.eventNames()
			switch {
			case s.OperationName == "demo: preemption":
				root = true
			case s.OperationName == "process "+demoVictim && slices.Contains(ev, "preempted"):
				runs.first = s
			case s.OperationName == "process "+demoVictim && slices.Contains(ev, "resumed"):
				runs.second = s
			case s.OperationName == "process "+demoUrgent && slices.Contains(ev, "preempted.victim"):
				runs.urgent = s
			}
		}
		return root && runs.first.SpanID != "" && runs.second.SpanID != "" && runs.urgent.SpanID != ""
	}
	ok := assert.Eventually(t, complete, 30*time.Second, 200*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if !ok {
		t.Fatalf("Jaeger at %s never returned the whole preemption trace %s (last error %v; spans %q)",
			jc.base, traceID, lastErr, names)
	}
	return runs
}

// preemptionRuns are the process spans of the demo's preemption: the
// victim's preempted and resumed runs, and the urgent run.
type preemptionRuns struct {
	first, second, urgent jaegerSpan
	all                   []jaegerSpan // every span of the trace
}

// eventsJS lists, for every expanded span on a trace page, the events
// (logs) its details show: the value of each log's "event" field, in order.
// It clicks "show more..." first, since the UI shows three logs per span.
const eventsJS = `(() => {
	document.querySelectorAll('.AccordianLogs--toggle').forEach(b => {
		if (b.textContent === 'show more...' || b.textContent === 'show all') b.click();
	});
	return [...document.querySelectorAll('.AccordianLogs')].map(logs =>
		[...logs.querySelectorAll('.AccordianKeyValues--summaryItem')]
			.filter(li => li.querySelector('.AccordianKeyValues--summaryLabel')?.textContent === 'event')
			.map(li => li.lastChild.textContent));
})()`

// waitEvents waits until the page shows the events of n expanded spans
// (every span's list as long as want's) and returns them.
func waitEvents(t *testing.T, ctx context.Context, want ...[]string) [][]string {
	t.Helper()
	var (
		mu      sync.Mutex
		got     [][]string
		lastErr error
	)
	shown := func() bool {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		events, err := chromedp.Run(sctx, chromedp.Evaluate[[][]string](eventsJS))
		mu.Lock()
		defer mu.Unlock()
		got, lastErr = events, err
		if err != nil || len(events) != len(want) {
			return false
		}
		for i := range want {
			if len(events[i]) != len(want[i]) {
				return false
			}
		}
		return true
	}
	ok := assert.Eventually(t, shown, 20*time.Second, 200*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if !ok {
		t.Fatalf("the page never listed the events %q of %d spans (last error %v); it lists %q", want, len(want), lastErr, got)
	}
	return got
}
