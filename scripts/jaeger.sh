#!/usr/bin/env bash
# jaeger.sh build|start|stop|status|env|path|smoke|ui
#
#   build   build Jaeger v2 from source into the cache (skipped when cached):
#           $OVERTAKE_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/overtake)/jaeger-<version>
#   start   start it (in-memory storage) on free 127.0.0.1 ports unless it is
#           already running; prints the env file. It stops by itself after
#           OVERTAKE_JAEGER_LIFETIME (default and maximum 30m).
#           OVERTAKE_JAEGER_UI=<dir>: serve the Jaeger UI built in <dir> (its
#           index.html; see `ui`); the binary built from the Go module has
#           only a placeholder page there.
#   stop    stop it
#   status  exit 0 if running
#   env     print the env file: source it to get
#             OVERTAKE_JAEGER_OTLP_GRPC  host:port of the OTLP/gRPC receiver
#             OVERTAKE_JAEGER_OTLP_HTTP  host:port of the OTLP/HTTP receiver
#             OVERTAKE_JAEGER_QUERY      base URL of the query API and UI
#             OVERTAKE_JAEGER_UI         the UI directory served, "" if none
#   path    print the binary's path
#   smoke   send a span over OTLP/HTTP and find it through the query API
#   ui      extract the built Jaeger UI (a jaeger-ui-*.tar.gz in
#           $OVERTAKE_JAEGER_UI_DIST, default <repo>/../shared/jaeger-ui) into
#           $OVERTAKE_RUN_DIR/jaeger-ui/<name> once and print that directory;
#           exit 1 when there is no tarball
#
# State (pid, env, log) lives in $OVERTAKE_RUN_DIR (default <repo>/.run).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VERSION=${OVERTAKE_JAEGER_VERSION:-v1.76.0}
BIN=$OT_CACHE/jaeger-$VERSION
PIDFILE=$OT_RUN/jaeger.pid
ENVFILE=$OT_RUN/jaeger.env
LOGFILE=$OT_RUN/jaeger.log

build() {
	if [ -x "$BIN" ]; then
		ot_log "jaeger $VERSION: cached at $BIN"
		return
	fi
	local tmp json dir
	tmp=$(mktemp -d)
	# Outside any module, so our go.mod is neither read nor changed.
	json=$(cd "$tmp" && GOFLAGS= GOWORK=off go mod download -json "github.com/jaegertracing/jaeger@$VERSION") || true
	rmdir "$tmp"
	dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$json")
	if [ -z "$dir" ] || [ ! -d "$dir/cmd/jaeger" ]; then
		echo "jaeger.sh: go mod download of jaeger $VERSION gave no source dir:" >&2
		echo "$json" >&2
		exit 1
	fi
	# go install refuses the module (its go.mod has replace directives), so
	# build inside its source dir, which uses its own go.mod and go.sum.
	ot_log "jaeger $VERSION: building from $dir (about 5 minutes the first time)"
	mkdir -p "$OT_CACHE"
	(cd "$dir" && GOFLAGS= GOWORK=off go build -o "$BIN.tmp.$$" ./cmd/jaeger)
	mv "$BIN.tmp.$$" "$BIN"
	ot_log "jaeger $VERSION: built $BIN"
}

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

http_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1")" != 000 ]; }

start() {
	if running; then
		ot_log "jaeger already running (pid $(cat "$PIDFILE"))"
		cat "$ENVFILE"
		return
	fi
	[ -x "$BIN" ] || { echo "jaeger.sh: $BIN missing; run: $0 build" >&2; exit 1; }
	local lifetime=${OVERTAKE_JAEGER_LIFETIME:-30m}
	case $lifetime in
	*[!0-9smh]* | "") echo "jaeger.sh: bad OVERTAKE_JAEGER_LIFETIME=$lifetime" >&2; exit 1 ;;
	esac
	local secs
	case $lifetime in
	*h) secs=$((${lifetime%h} * 3600)) ;; *m) secs=$((${lifetime%m} * 60)) ;;
	*s) secs=${lifetime%s} ;; *) secs=$lifetime ;;
	esac
	[ "$secs" -le 1800 ] || secs=1800

	local ui=${OVERTAKE_JAEGER_UI:-} uiflag=()
	if [ -n "$ui" ]; then
		[ -f "$ui/index.html" ] || { echo "jaeger.sh: OVERTAKE_JAEGER_UI=$ui has no index.html" >&2; exit 1; }
		ui=$(cd "$ui" && pwd)
		uiflag=(--set=extensions.jaeger_query.ui.assets_path="$ui")
	fi

	mkdir -p "$OT_RUN"
	local ports
	mapfile -t ports < <(ot_freeports 4)
	export OVERTAKE_JAEGER_OTLP_GRPC_PORT=${ports[0]} OVERTAKE_JAEGER_OTLP_HTTP_PORT=${ports[1]}
	export OVERTAKE_JAEGER_QUERY_PORT=${ports[2]} OVERTAKE_JAEGER_QUERY_GRPC_PORT=${ports[3]}
	# timeout: own process group, forwards SIGTERM, ends Jaeger after $secs.
	# nohup/stdin: survive the shell that started it (e.g. `make jaeger`).
	nohup timeout --kill-after=10s "${secs}s" "$BIN" --config "$OT_ROOT/scripts/jaeger-config.yaml" \
		"${uiflag[@]}" </dev/null >"$LOGFILE" 2>&1 &
	local pid=$!
	echo "$pid" >"$PIDFILE"

	local q=http://127.0.0.1:$OVERTAKE_JAEGER_QUERY_PORT
	up() {
		kill -0 "$pid" && curl -sf --max-time 2 "$q/api/services" &&
			http_up "http://127.0.0.1:$OVERTAKE_JAEGER_OTLP_HTTP_PORT/v1/traces" &&
			(exec 3<>"/dev/tcp/127.0.0.1/$OVERTAKE_JAEGER_OTLP_GRPC_PORT")
	}
	if ! ot_wait_for 60 "jaeger to answer on $q" up; then
		tail -n 30 "$LOGFILE" >&2 || true
		stop
		exit 1
	fi
	cat >"$ENVFILE" <<EOT
export OVERTAKE_JAEGER_OTLP_GRPC=127.0.0.1:$OVERTAKE_JAEGER_OTLP_GRPC_PORT
export OVERTAKE_JAEGER_OTLP_HTTP=127.0.0.1:$OVERTAKE_JAEGER_OTLP_HTTP_PORT
export OVERTAKE_JAEGER_QUERY=$q
export OVERTAKE_JAEGER_UI=$ui
EOT
	ot_log "jaeger $VERSION up (pid $pid, stops itself in ${secs}s): UI $q${ui:+ (served from $ui)}"
	cat "$ENVFILE"
}

stop() {
	if [ ! -f "$PIDFILE" ]; then
		return 0
	fi
	local pid
	pid=$(cat "$PIDFILE")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$pid" 2>/dev/null || true
		ot_log "jaeger stopped (pid $pid)"
	fi
	rm -f "$PIDFILE" "$ENVFILE"
}

# smoke: send one span over OTLP/HTTP and wait until the query API lists its
# service, proving the receiver -> storage -> query path works.
smoke() {
	running || { echo "jaeger.sh: not running" >&2; exit 1; }
	. "$ENVFILE"
	local svc now trace span
	svc=overtake-smoke-$$
	now=$(date +%s%N)
	trace=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	span=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
	curl -sf --max-time 5 -H 'Content-Type: application/json' \
		"http://$OVERTAKE_JAEGER_OTLP_HTTP/v1/traces" -d @- >/dev/null <<EOT
{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"$svc"}}]},
 "scopeSpans":[{"scope":{"name":"smoke"},"spans":[{"traceId":"$trace",
 "spanId":"$span","name":"smoke","kind":1,
 "startTimeUnixNano":"$now","endTimeUnixNano":"$((now + 1000000))"}]}]}]}
EOT
	listed() { curl -sf --max-time 2 "$OVERTAKE_JAEGER_QUERY/api/services" | grep -q "\"$svc\""; }
	ot_wait_for 20 "span of $svc to show up in $OVERTAKE_JAEGER_QUERY" listed
	ot_log "jaeger smoke test ok: OTLP/HTTP span stored and queried ($svc)"
}

# ui: extract the built Jaeger UI once; print its directory.
ui() {
	local dist=${OVERTAKE_JAEGER_UI_DIST:-$(dirname "$OT_ROOT")/shared/jaeger-ui} tarball name dir
	tarball=$(find "$dist" -maxdepth 1 -name 'jaeger-ui-*.tar.gz' 2>/dev/null | sort | tail -n 1) || true
	if [ -z "$tarball" ]; then
		echo "jaeger.sh: no jaeger-ui-*.tar.gz in $dist" >&2
		exit 1
	fi
	name=$(basename "$tarball" .tar.gz)
	dir=$OT_RUN/jaeger-ui/$name
	if [ ! -f "$dir/index.html" ]; then
		rm -rf "$dir.tmp.$$"
		mkdir -p "$dir.tmp.$$"
		tar -xzf "$tarball" -C "$dir.tmp.$$"
		[ -f "$dir.tmp.$$/index.html" ] || { echo "jaeger.sh: $tarball has no index.html at its top" >&2; rm -rf "$dir.tmp.$$"; exit 1; }
		rm -rf "$dir"
		mv "$dir.tmp.$$" "$dir"
		ot_log "jaeger UI extracted from $tarball into $dir"
	fi
	echo "$dir"
}

case ${1:-} in
build) build ;;
ui) ui ;;
smoke) smoke ;;
start) start ;;
stop) stop ;;
status) running ;;
env) running && cat "$ENVFILE" ;;
path) echo "$BIN" ;;
*)
	echo "usage: $0 build|start|stop|status|env|path|smoke|ui" >&2
	exit 2
	;;
esac
