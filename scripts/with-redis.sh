#!/usr/bin/env bash
# with-redis.sh COMMAND...: run COMMAND with OVERTAKE_REDIS_ADDR pointing at a
# throwaway redis-server on a free 127.0.0.1 port (persistence off, data in a
# temp dir), stopped when COMMAND ends, whatever happens. The server also dies
# by itself after OVERTAKE_REDIS_LIFETIME (default 60m).
#
# If OVERTAKE_REDIS_ADDR is already set, that server is used as is. If
# redis-server is not installed, one line says so and COMMAND runs against
# miniredis only.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -n "${OVERTAKE_REDIS_ADDR:-}" ]; then
	exec "$@"
fi
if ! command -v redis-server >/dev/null 2>&1; then
	echo "redis-server not installed: running tests against miniredis only (apt-get install redis-server for the real half)" >&2
	exec "$@"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/overtake-redis.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port=$(ot_freeports 1)
# timeout puts itself in its own process group (so cleanup can kill it and
# redis together), forwards SIGTERM to redis, and ends it after the lifetime.
timeout --kill-after=10s "${OVERTAKE_REDIS_LIFETIME:-60m}" \
	redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --daemonize no \
	--save "" --appendonly no --logfile "$dir/redis.log" &
pid=$!

ready() { kill -0 "$pid" && [ "$(redis-cli -h 127.0.0.1 -p "$port" ping)" = PONG ]; }
if ! ot_wait_for 15 "redis-server on 127.0.0.1:$port" ready; then
	tail -n 20 "$dir/redis.log" >&2 || true
	exit 1
fi
export OVERTAKE_REDIS_ADDR=127.0.0.1:$port
ot_log "redis-server $(redis-server --version | grep -o 'v=[^ ]*') on $OVERTAKE_REDIS_ADDR (pid $pid)"
status=0
"$@" || status=$?
exit "$status"
