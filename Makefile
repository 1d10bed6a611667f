# chaos: build, test and benchmark. Needs only Go (and kcat for some tests).
#
#   make run     build, then run one correctness test (results under store/)
#   make test    vet, gofmt check, then every test (what CI runs)
#   make test-fast  the pure packages' tests with -short: the edit loop
#
# Variables: VERSION (stamped into the binary), FUZZTIME (make fuzz),
# BENCHTIME (records per produce benchmark run) and BENCHCOUNT (runs of each
# benchmark) for make bench.

SHELL := /bin/bash
GO ?= go
BIN := bin/chaos
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 5m
BENCHTIME ?= 1000000x
BENCHCOUNT ?= 3

.PHONY: all build test test-fast run bench fuzz lint docs clean

all: build

## build: the static chaos binary in bin/chaos
build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/chaos

## lint: go vet, and gofmt must have nothing to say
lint:
	$(GO) vet ./...
	@files=$$(find . -name '*.go' -not -path './.*' -not -path '*/testdata/*'); \
	 unformatted=$$(gofmt -l $$files); \
	 if [ -n "$$unformatted" ]; then echo "gofmt -l lists files that need formatting:"; echo "$$unformatted"; exit 1; fi

## test: lint, then every package's tests
test: lint
	$(GO) test -count=1 -timeout 25m ./...

## test-fast: the edit loop: the packages of pure logic and the data-driven
## tests (broker core, simulated cluster, storage, checker, history, nemesis,
## hunt draws, campaigns, results), with -short, which skips their long
## searches; no real process, container or browser. make test is what CI runs.
FAST := ./broker/batch/... ./broker/bug/... ./broker/control/... ./broker/core/... ./broker/memdriver/... \
	./broker/storage/... ./broker/wire/... ./campaign/... ./checker/... ./history/... ./hunt/... \
	./internal/cli/... ./internal/deps/... ./nemesis/... ./results ./shard/... ./sim/...
test-fast:
	$(GO) test -short -count=1 -timeout 10m $(FAST)

## run: build, then the default test: 3 brokers, acks=-1, min.insync.replicas=2,
## clean election, a mixed nemesis (kill, partition, pause, slow follower) with a
## window about every 5 s, so that each kind runs at least once in the 60 s
run: build
	$(BIN) run --nemesis kill,partition,pause,slow-follower --nemesis-interval 5s

## docs: rewrite the parts of docs/ generated from the code (the command
## reference, the presets, the fault table, the guarantee matrix); make test
## fails while one is stale
docs:
	$(GO) test ./cmd/chaos -run TestGeneratedDocs -count=1 -update
	$(GO) test ./nemesis -run TestFaultTable -count=1 -update
	$(GO) test ./checker -run TestGuaranteesDoc -count=1 -update

## bench: the end-to-end produce benchmarks (bench/), the storage, checker and report benchmarks,
## the local runtime's proxy (healthy and delayed links), and a simulated 60 s default test (sim/)
bench:
	$(GO) test -run=NONE -bench=. -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) -timeout 20m ./bench/
	$(GO) test -run=NONE -bench=. -benchmem -count=$(BENCHCOUNT) -timeout 20m ./broker/storage/
	$(GO) test -run=NONE -bench=. -benchmem -count=$(BENCHCOUNT) -timeout 20m ./checker/
	$(GO) test -run=NONE -bench=. -benchmem -count=$(BENCHCOUNT) -timeout 20m ./results/report/
	$(GO) test -run=NONE -bench=. -benchmem -count=$(BENCHCOUNT) -timeout 20m ./proxy/
	$(GO) test -run=NONE -bench=. -benchtime=5x -count=$(BENCHCOUNT) -timeout 20m ./sim/

## fuzz: fuzz the Kafka request decoder, the history reader and the whole
## check, each for FUZZTIME (default 5m); seeds live in testdata/fuzz
fuzz:
	$(GO) test -run=NONE -fuzz=FuzzParseRequest -fuzztime=$(FUZZTIME) ./broker/wire/
	$(GO) test -run=NONE -fuzz=FuzzRead -fuzztime=$(FUZZTIME) ./history/
	$(GO) test -run=NONE -fuzz=FuzzCheck -fuzztime=$(FUZZTIME) ./checker/

## clean: remove build output (bin/) and stray test binaries and profiles
clean:
	rm -rf bin
	rm -f *.test *.out bench/*.test
