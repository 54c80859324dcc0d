#!/usr/bin/env bash
# jaeger-screenshots.sh: regenerate the README's Jaeger screenshots
# (docs/jaeger/*.png) from the browser test's set-up: a fresh Jaeger serving
# the built Jaeger UI (../shared/jaeger-ui), the demo's preemption exported
# to it, headless Chromium at 1280x800. It runs TestJaegerUI through
# scripts/test-jaeger.sh with OVERTAKE_SCREENSHOTS_DIR set, in a run
# directory of its own so that the search page lists this run's traces only,
# and fails unless every screenshot is written and under 300 KB.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

out=${OVERTAKE_SCREENSHOTS_DIR:-$OT_ROOT/docs/jaeger}
shots=(search.png timeline.png victim-events.png)
max_bytes=$((300 * 1024))

if ! scripts/jaeger.sh ui >/dev/null; then
	echo "jaeger-screenshots.sh: needs the built Jaeger UI in ../shared/jaeger-ui" >&2
	exit 1
fi
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/overtake-shots.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# A Jaeger of its own (own pid and env files), stopped by test-jaeger.sh.
OVERTAKE_RUN_DIR=$OT_RUN/screenshots OVERTAKE_SCREENSHOTS_DIR=$tmp \
	JAEGER_RUN='^TestJaegerUI$' PKGS=./e2e scripts/test-jaeger.sh

ot_publish_shots "$tmp" "$out" "$max_bytes" "did TestJaegerUI skip?" "${shots[@]}"
