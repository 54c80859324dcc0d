# Overtake developer targets. `make` or `make help` lists them.
# Test targets print plain go test output plus a closing
# "tests: N passed, N failed, N skipped" line (scripts/gotest.sh).
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
PKGS ?= ./...
BENCH_ARGS ?=
BENCH_PEERS_ARGS ?=
CHAOS_ARGS ?=
SOAK ?= 1h
DEMO_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help test test/shards test/short fuzz lint bench bench-cpu bench-shards bench-peers chaos chaos/ci soak jaeger jaeger/stop test/jaeger jaeger/screenshots console console/screenshots demo commits clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_\/-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

test: ## go test -race on miniredis + a throwaway real redis-server (if installed), then the runtime's tests on three shards
	scripts/with-redis.sh scripts/gotest.sh -race -count=1 $(PKGS)
	$(MAKE) test/shards

test/shards: ## the runtime's tests (-short) on queues of three shards (OVERTAKE_TEST_SHARDS=3)
	OVERTAKE_TEST_SHARDS=3 scripts/with-redis.sh scripts/gotest.sh -short -count=1 ./runtime

fuzz: ## a short go test -fuzz run of every fuzz target (FUZZTIME each, default 10s)
	scripts/fuzz.sh

test/short: ## quick go test -short, miniredis only
	scripts/gotest.sh -short -count=1 $(PKGS)

GOLANGCI_VERSION ?= v2.15.0
GOLANGCI = $(shell $(GO) env GOPATH)/bin/golangci-lint-$(GOLANGCI_VERSION)

lint: $(GOLANGCI) ## gofmt, vet, tidy, golangci-lint (layering rules too), luacheck of the Lua scripts, exported names and struct fields (scripts/exported), no alias of an internal type, comments name only what exists, producer binary size (<= 12 MB)
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@command -v luacheck >/dev/null || { echo "luacheck not installed (Debian package lua-check)"; exit 1; }
	luacheck --formatter plain internal/store/lua
	$(GO) vet $(PKGS)
	$(GO) mod tidy -diff
	$(GOLANGCI) run ./...
	@$(GO) run ./scripts/exported
	@$(GO) run ./scripts/staleref
	@bin=$$(mktemp -d)/producer && $(GO) build -o $$bin ./scripts/producer && size=$$(stat -c %s $$bin) && rm -f $$bin && \
		awk -v s=$$size 'BEGIN { printf "producer binary (scripts/producer): %.1f MB (target: <= 12 MB)\n", s/1e6; exit (s > 12e6) }'

# golangci-lint, installed once per version (cached in GOPATH/bin).
$(GOLANGCI):
	GOBIN=$$(mktemp -d) && GOBIN=$$GOBIN $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION) \
		&& mkdir -p $(dir $(GOLANGCI)) && mv $$GOBIN/golangci-lint $(GOLANGCI)

bench: ## benchmarks and cmd/overtake-bench (if present) against a real redis-server
	scripts/with-redis.sh bash -ec '$(GO) test -run "^$$" -bench . -benchmem $(PKGS); \
		if [ -d cmd/overtake-bench ]; then $(GO) run ./cmd/overtake-bench $(BENCH_ARGS); fi'

chaos: ## chaos suite: 3 worker processes, 20k tasks, kill -9, SIGSTOP, Redis killed, network cut, Sentinel failover; fails on any breach
	$(GO) run ./cmd/overtake-chaos $(CHAOS_ARGS)

chaos/ci: ## the bounded chaos run of .ci/run (same faults, 20k tasks at a higher rate, then a Sentinel failover)
	$(GO) run ./cmd/overtake-chaos -rate 400 -timeout 8m $(CHAOS_ARGS)

soak: ## the chaos suite for SOAK (default 1h, e.g. SOAK=30m) at 100 tasks/s: faults every minute, a failover every 30 s; not in CI
	$(GO) run ./cmd/overtake-chaos -duration $(SOAK) $(CHAOS_ARGS)

BENCH_CPU_ARGS ?= --tasks 20000 --rounds 3

bench-cpu: ## CPU per no-op task of the producer, the worker and redis-server, each side on its own (cmd/overtake-bench --only cpu)
	$(GO) run ./cmd/overtake-bench --only cpu $(BENCH_CPU_ARGS)

BENCH_SHARDS_ARGS ?=

bench-shards: ## one queue over a 3-master Redis Cluster it starts, Shards 1, 3 and 6: Redis CPU and commands per task on each master, projected ceiling (cmd/overtake-bench --only shards)
	$(GO) run ./cmd/overtake-bench --only shards $(BENCH_SHARDS_ARGS)

bench-peers: ## Overtake vs asynq and BullMQ (node sidecars; npm ci once) on one redis-server it starts: bench/peers/RESULTS.md and charts (BENCH_PEERS_ARGS=-quick: a smoke test)
	cd bench/peers && $(GO) run . $(BENCH_PEERS_ARGS)

jaeger: ## build (cached) and start Jaeger v2 on 127.0.0.1, with the UI of ../shared/jaeger-ui if there; prints OVERTAKE_JAEGER_* to source
	scripts/jaeger.sh build
	OVERTAKE_JAEGER_UI=$${OVERTAKE_JAEGER_UI-$$(scripts/jaeger.sh ui 2>/dev/null || true)} scripts/jaeger.sh start

jaeger/stop: ## stop the Jaeger started by `make jaeger`
	scripts/jaeger.sh stop

test/jaeger: ## run the Jaeger end-to-end tests (-run Jaeger) against a real Jaeger; the UI one in headless Chromium
	scripts/test-jaeger.sh

jaeger/screenshots: ## regenerate the README's Jaeger UI screenshots (docs/jaeger/*.png) with headless Chromium
	scripts/jaeger-screenshots.sh

console: ## serve the web console over the demo's embedded Redis and looping workload (go run ./cmd/overtake console --demo)
	$(GO) run ./cmd/overtake console --demo

console/screenshots: ## regenerate the README's console screenshots (docs/console/*.png) with headless Chromium
	scripts/console-screenshots.sh

demo: ## run the demo (embedded Redis); traces go to Jaeger if `make jaeger` runs
	@if env=$$(scripts/jaeger.sh env 2>/dev/null); then eval "$$env"; \
		echo "traces: $$OVERTAKE_JAEGER_QUERY"; \
		otlp="--otlp $$OVERTAKE_JAEGER_OTLP_GRPC --otlp-protocol grpc"; fi; \
	$(GO) run ./cmd/overtake demo $${otlp:-} $(DEMO_ARGS)

COMMITS ?= main..HEAD

commits: ## check the messages of COMMITS (default main..HEAD): subject <= 72 characters, "pkg: what changed"
	scripts/commitmsg -r $(COMMITS)

clean: ## remove build outputs and local run state
	rm -rf .run bin coverage.out coverage.html
