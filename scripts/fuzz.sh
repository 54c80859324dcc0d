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
	for try in 1 2; do
		if out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" 2>&1); then
			echo "$out"
			break
		fi
		echo "$out"
		# Go's fuzzer can end a run with a bare "context deadline exceeded"
		# when -fuzztime expires while a worker is busy (a loaded machine);
		# no input failed then, so that run is tried once more. A real
		# failure writes its input under testdata/fuzz and fails at once.
		if [ "$try" = 1 ] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
			echo "fuzz: $pkg $name: the run timed out without a failing input; trying once more"
			continue
		fi
		status=1
		break
	done
# testdata/ holds fixtures, not packages of the module (scripts/staleref's
# fake repository has fuzz targets of its own).
done < <(grep -rlE --include='*_test.go' --exclude-dir=testdata '^func Fuzz' . | sort | while read -r f; do
	grep -oE '^func Fuzz[A-Za-z0-9_]+' "$f" | sed "s|^func |${f#./}:|"
done)
exit $status
