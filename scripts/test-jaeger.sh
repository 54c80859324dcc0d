#!/usr/bin/env bash
# test-jaeger.sh: build and start Jaeger (unless already running), check it
# with a smoke span, then run the Jaeger end-to-end tests with
# OVERTAKE_JAEGER_* exported (and a real Redis, see with-redis.sh). A Jaeger
# started here is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

scripts/jaeger.sh build
started=
stop_ours() { if [ -n "$started" ]; then scripts/jaeger.sh stop; fi; }
trap stop_ours EXIT
if ! scripts/jaeger.sh status; then
	started=1
	scripts/jaeger.sh start >/dev/null
fi
eval "$(scripts/jaeger.sh env)"
export OVERTAKE_JAEGER_OTLP_GRPC OVERTAKE_JAEGER_OTLP_HTTP OVERTAKE_JAEGER_QUERY
scripts/jaeger.sh smoke
ot_log "OVERTAKE_JAEGER_OTLP_GRPC=$OVERTAKE_JAEGER_OTLP_GRPC OVERTAKE_JAEGER_OTLP_HTTP=$OVERTAKE_JAEGER_OTLP_HTTP OVERTAKE_JAEGER_QUERY=$OVERTAKE_JAEGER_QUERY"
scripts/with-redis.sh scripts/gotest.sh -race -count=1 -run "${JAEGER_RUN:-Jaeger}" "${PKGS:-./...}"
