# shellcheck shell=bash
# Shared helpers for the scripts in this folder; source it, don't run it.

OT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OT_CACHE=${OVERTAKE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/overtake}
OT_RUN=${OVERTAKE_RUN_DIR:-$OT_ROOT/.run}

ot_log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# ot_freeports N: print N distinct free ports on 127.0.0.1, one per line.
# Uses the Go helper; falls back to a bounded /dev/tcp probe of random ports.
ot_freeports() {
	local n=${1:-1} out
	if out=$(cd "$OT_ROOT" && go run ./scripts/freeport -n "$n" 2>/dev/null) && [ -n "$out" ]; then
		echo "$out"
		return 0
	fi
	local found=() p tries=0
	while [ "${#found[@]}" -lt "$n" ]; do
		tries=$((tries + 1))
		if [ "$tries" -gt 200 ]; then
			echo "ot_freeports: no free port found" >&2
			return 1
		fi
		p=$((20000 + RANDOM % 10000))
		if [[ " ${found[*]} " == *" $p "* ]]; then continue; fi
		# A refused connection means nobody listens there.
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			found+=("$p")
		fi
	done
	printf '%s\n' "${found[@]}"
}

# ot_wait_for SECONDS DESCRIPTION COMMAND...: run COMMAND every 0.2 s until it
# succeeds; fail after SECONDS.
ot_wait_for() {
	local secs=$1 what=$2
	shift 2
	local end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$end" ]; then
			echo "timed out after ${secs}s waiting for $what" >&2
			return 1
		fi
		sleep 0.2
	done
}

# ot_publish_shots <from> <to> <max bytes> <hint> <file>...: check that
# every screenshot was written and is small enough, then move them all;
# exit 1 naming the first that is missing (hint says why it may be) or too
# large, moving none.
ot_publish_shots() {
	local from=$1 to=$2 max=$3 hint=$4 f size
	shift 4
	for f in "$@"; do
		[ -f "$from/$f" ] || { echo "$(basename "$0"): $f not written ($hint)" >&2; exit 1; }
		size=$(wc -c <"$from/$f")
		if [ "$size" -gt "$max" ]; then
			echo "$(basename "$0"): $f is $((size / 1024)) KB, over $((max / 1024)) KB" >&2
			exit 1
		fi
	done
	for f in "$@"; do
		mv "$from/$f" "$to/$f"
		ot_log "$to/$f: $(($(wc -c <"$to/$f") / 1024)) KB"
	done
}
