#!/usr/bin/env bash
# test-jaeger.sh: build and start Jaeger (unless already running), check it
# with a smoke span, then run the Jaeger end-to-end tests with
# OVERTAKE_JAEGER_* exported (and a real Redis, see with-redis.sh). A Jaeger
# started here is stopped at the end.
#
# When ../shared/jaeger-ui holds the built Jaeger UI (scripts/jaeger.sh ui),
# the Jaeger started here serves it (OVERTAKE_JAEGER_UI) and the browser test
# (e2e/jaegerui_test.go, headless Chromium) runs; otherwise it skips.
# OVERTAKE_SCREENSHOTS_DIR=<dir> makes that test write the README's
# screenshots there (scripts/jaeger-screenshots.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

scripts/jaeger.sh build
if ui=$(scripts/jaeger.sh ui); then
	export OVERTAKE_JAEGER_UI=$ui
else
	ot_log "no built Jaeger UI: the browser test (TestJaegerUI) will skip"
	export OVERTAKE_JAEGER_UI=
fi
if ! command -v "${OVERTAKE_CHROMIUM:-chromium}" >/dev/null && ! command -v chromium-browser >/dev/null &&
	! command -v google-chrome >/dev/null; then
	ot_log "no Chromium on \$PATH (apt-get install chromium, or set OVERTAKE_CHROMIUM): the browser test (TestJaegerUI) will skip"
fi
started=
stop_ours() { if [ -n "$started" ]; then scripts/jaeger.sh stop; fi; }
trap stop_ours EXIT
if ! scripts/jaeger.sh status; then
	started=1
	scripts/jaeger.sh start >/dev/null
fi
want_ui=$OVERTAKE_JAEGER_UI
eval "$(scripts/jaeger.sh env)"
export OVERTAKE_JAEGER_OTLP_GRPC OVERTAKE_JAEGER_OTLP_HTTP OVERTAKE_JAEGER_QUERY OVERTAKE_JAEGER_UI
if [ -n "$want_ui" ] && [ -z "${OVERTAKE_JAEGER_UI:-}" ]; then
	ot_log "the Jaeger already running serves no UI: the browser test will skip (scripts/jaeger.sh stop, then rerun)"
fi
scripts/jaeger.sh smoke
ot_log "OVERTAKE_JAEGER_OTLP_GRPC=$OVERTAKE_JAEGER_OTLP_GRPC OVERTAKE_JAEGER_OTLP_HTTP=$OVERTAKE_JAEGER_OTLP_HTTP OVERTAKE_JAEGER_QUERY=$OVERTAKE_JAEGER_QUERY OVERTAKE_JAEGER_UI=${OVERTAKE_JAEGER_UI:-}"
scripts/with-redis.sh scripts/gotest.sh -race -count=1 -run "${JAEGER_RUN:-Jaeger}" "${PKGS:-./...}"
