// Package e2e holds Overtake's end-to-end tests against real outside
// services; it has no code of its own.
//
// jaeger_test.go runs a preemption scenario (and a retry) through a real
// runtime that exports its spans over OTLP to a real Jaeger, then reads the
// traces back through Jaeger's query API (/api/traces?service=...) and checks
// the process spans, the preempted, checkpoint.saved, requeued, resumed and
// preempted.victim events and the span links. It runs when
// OVERTAKE_JAEGER_OTLP_GRPC, OVERTAKE_JAEGER_OTLP_HTTP and
// OVERTAKE_JAEGER_QUERY are set, as `make test/jaeger` (scripts/test-jaeger.sh)
// does after starting Jaeger; otherwise it is skipped.
//
// jaegerui_test.go runs the demo (cmd/overtake demo --otlp) against that
// Jaeger when it serves the real Jaeger UI (OVERTAKE_JAEGER_UI, set by
// scripts/test-jaeger.sh from ../shared/jaeger-ui) and opens the preemption
// trace in headless Chromium (chromedp): the span names with the task types
// and the victim's events must be on the page. Without the UI or Chromium it
// is skipped; with OVERTAKE_SCREENSHOTS_DIR it writes the README's
// screenshots (scripts/jaeger-screenshots.sh).
package e2e
