#!/usr/bin/env bash
# fuzz.sh: a short `go test -fuzz` run of every fuzz target in the module
# (FUZZTIME each, default 10s). New failing inputs land in testdata/fuzz/
# of their package, where `go test` replays them from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
status=0
while IFS=: read -r file name; do
	pkg=./$(dirname "$file")
	echo "fuzz: $pkg $name ($fuzztime)"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
		status=1
	fi
done < <(grep -rlE --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
	grep -oE '^func Fuzz[A-Za-z0-9_]+' "$f" | sed "s|^func |${f#./}:|"
done)
exit $status
