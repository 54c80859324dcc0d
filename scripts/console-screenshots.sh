#!/usr/bin/env bash
# console-screenshots.sh: regenerate the README's console screenshots
# (docs/console/*.png) with headless Chromium: TestBrowserScreenshots runs
# half a minute of a busy 2-slot fleet on a throwaway redis-server, then
# shoots the queue page (laptop and phone widths) and the preemption feed.
# Fails unless every screenshot is written and under 300 KB.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

out=${OVERTAKE_CONSOLE_SCREENSHOTS_OUT:-$OT_ROOT/docs/console}
shots=(queue.png queue-phone.png feed.png)
max_bytes=$((300 * 1024))
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/overtake-console-shots.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

OVERTAKE_CONSOLE_SCREENSHOTS=$tmp scripts/with-redis.sh \
	go test -count=1 -run '^TestBrowserScreenshots$' -v ./console/

ot_publish_shots "$tmp" "$out" "$max_bytes" "did the test skip? it needs chromium and redis-server" "${shots[@]}"
