#!/usr/bin/env bash
# gotest.sh ARGS...: `go test -json ARGS` shown as plain go test output plus a
# closing "tests: N passed, N failed, N skipped" line (see scripts/testsum).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
mkdir -p "$OT_RUN/bin"
(cd "$OT_ROOT" && go build -o "$OT_RUN/bin/testsum" ./scripts/testsum)
go test -json "$@" | "$OT_RUN/bin/testsum"
