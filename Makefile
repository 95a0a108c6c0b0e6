# Netstick: `make run` runs the default experiment and prints its results; `make test` runs
# the tests. Both install what is missing first (workflow/setup.sh).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := $(CURDIR)/.tools/go/bin:$(PATH)
export GOTOOLCHAIN := local
# No GOFLAGS: Go's own default is -mod=readonly, and -mod=vendor where a module has a vendor
# directory (`go mod vendor` on a connected machine, copied over: how an offline node builds).
# Build settings setup wrote (CGO_ENABLED=0 where there is no libenet), exported to every recipe:
# the workflow's own builds (library versions) inherit them.
-include .tools/netstick-build.env

REF := prototypes/reference
BIN := $(REF)/bin/netstick-ref
PY := .venv/bin/python
NETSTICK := .venv/bin/netstick
# A budget in executions, not seconds: with a duration, Go 1.26's fuzz coordinator can report a
# spurious "context deadline exceeded" when time runs out under load (golang/go#75804, fixed in Go
# 1.27); a count has no deadline to race. 300000 executions take about 3-9 s per target here.
FUZZ_EXECS ?= 300000
# Every decoder that reads bytes from the network, as package:FuzzTarget.
FUZZ_TARGETS := wire:FuzzValidate transport/framing:FuzzReader server:FuzzReceived client:FuzzPlayerReceived

.PHONY: all setup build versions run report demo test test-fast test-go test-csharp test-python fuzz lint bench-prototypes bench-harness bench-campaign bench-stats bench-report reanalysis clean

all: build

# What setup installs: `run` (a campaign and its report) or `test` (also SLURM, chromium, ethtool);
# run-side targets ask for less (target-specific, so inherited by their setup prerequisite).
SETUP_FOR ?= test
run demo reanalysis report bench-prototypes bench-harness bench-campaign bench-stats bench-report: SETUP_FOR = run

setup:
	@workflow/setup.sh --for $(SETUP_FOR)

# CGO_ENABLED from setup: 0 when there is no libenet (the reference then lacks its enet transport).
build: setup
	. .tools/netstick-build.env && cd $(REF) && go build -trimpath -o bin/netstick-ref ./cmd/netstick-ref
	cd workflow/harness/netemu && go build -trimpath -o bin/netemu .

# The quick campaign (workflow/campaigns/quick.yaml) on this machine, ending with its report.
# Resumes where it stopped; after a hard kill run `.venv/bin/snakemake --unlock` once.
run: build
	.venv/bin/snakemake --config campaign=$(CAMPAIGN)
	@.venv/bin/snakemake reanalysis --quiet all && echo "re-analysis of Net-Celerity's data: report/_output/net-celerity-reanalysis/index.html"
	@echo "report: report/_output/$(CAMPAIGN)/index.html (PDF and RO-Crate beside it)"

# Net-Celerity's committed raw data (data/external/net-celerity) re-analysed with proper statistics.
reanalysis: setup
	.venv/bin/snakemake reanalysis

CAMPAIGN ?= quick

# The module files of every library version prototypes/reference/prototype.yaml declares
# (library_builds), from go.mod; commit the result. Needs the module proxy.
versions: setup
	$(PY) $(REF)/versions/generate.py

# A campaign's report on any machine from a copied results directory: copy data/results/<campaign>
# to DATA/results/<campaign>, then `make report CAMPAIGN=<campaign> DATA=<dir>`.
DATA ?= data
report: setup
	$(NETSTICK) report --data-dir $(DATA) $(CAMPAIGN)
	@echo "report: report/_output/$(CAMPAIGN)/index.html"

demo: build
	$(NETSTICK) demo

test: build lint test-go fuzz test-csharp test-python

lint: setup
	@cd $(REF) && test -z "$$(gofmt -l .)" || { echo "gofmt: these files need formatting:"; gofmt -l .; exit 1; }
	cd $(REF) && go vet ./...
	cd workflow/harness/netemu && test -z "$$(gofmt -l .)" && go vet ./...
	cd $(REF) && go mod tidy -diff
	cd workflow/harness/netemu && go mod tidy -diff
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports
	@# GitHub Actions workflows: actionlint (pinned, built into .tools/bin) and zizmor (pinned in
	@# requirements.txt; --offline: its audits that ask GitHub's API need a token and the network).
	workflow/tools/install-linters.sh
	.tools/bin/actionlint
	.venv/bin/zizmor --offline --no-progress .github/workflows

test-go: setup
	cd $(REF) && go test -race -count=1 -timeout 300s ./...
	cd workflow/harness/netemu && go test -count=1 -timeout 300s ./...

# Netstick.Core (the contract in C# for the mono and Unity prototypes): mcs builds it, NUnit tests it.
test-csharp: setup
	prototypes/unity/build-core.sh

# Bounded fuzzing of every decoder that reads from the network ($(FUZZ_EXECS) executions each).
fuzz: setup
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t##*:}; echo "fuzz $$pkg $$fn ($(FUZZ_EXECS) executions)"; \
	  (cd $(REF) && go test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZ_EXECS)x ./internal/$$pkg/) || exit 1; \
	done

# apache-otava's own command line (.tools/otava) reads the history's series in a test.
test-python: build
	workflow/tools/install-otava.sh
	$(PY) -m pytest -q

# The unit tier only (tests/python/unit: in-process, a few minutes): for everyday changes. No
# build, no Go, C# or fuzzing; `make test` stays the gate. One tier: `$(PY) -m pytest -m slurm`.
test-fast: setup
	$(PY) -m pytest -q -m "not (e2e or slurm or render or toolchain or perf)"

# The tool measuring itself: `netstick bench NAME` writes data/bench/NAME.json.
bench-prototypes: build
	$(NETSTICK) bench prototypes

bench-harness: build
	$(NETSTICK) bench harness

bench-campaign: build
	$(NETSTICK) bench campaign

# 100 million synthetic RTT samples through the stats stage against pandas.read_csv.
bench-stats: setup
	$(NETSTICK) bench stats

# Time and size of the quick campaign's report (figure data, facts, check-list, HTML + PDF, RO-Crate).
bench-report: run
	$(NETSTICK) bench report --campaign $(CAMPAIGN)

clean:
	rm -rf $(REF)/bin .pytest_cache .ruff_cache
