# xlb: XDP/eBPF L4 load balancer. `make test` is what CI runs.
GO ?= go
GOFLAGS ?=
BPF_SOURCES := $(shell find bpf -name '*.c' -o -name '*.h')
FUZZTIME ?= 20s

.PHONY: all deps demo generate build test check-generated lint unit fuzz bench clean

all: build

## deps: install what the build, the tests and the demo need (root, Debian)
deps:
	./scripts/deps.sh

## demo: build, bring the lab up, balance TCP and UDP through xlb, tear down
demo: deps build
	./bin/xlb lab demo

## generate: compile the BPF C with clang and regenerate the bpf2go Go files
generate:
	$(GO) generate ./internal/...

## build: build the xlb binary into bin/
build:
	$(GO) build -buildvcs=auto -o bin/xlb ./cmd/xlb

## test: formatting and vet checks, generated files up to date, every test
test: deps lint check-generated unit fuzz

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@if command -v clang-format >/dev/null; then \
		clang-format --dry-run --Werror $(BPF_SOURCES); \
	else echo "clang-format not installed: C formatting not checked"; fi

## check-generated: regenerate and fail if the committed files differ
check-generated: generate
	@git diff --exit-code -- '*_bpfel.go' '*_bpfel.o' || \
		{ echo "generated files differ from the committed ones: run make generate and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- '*_bpfel.go' '*_bpfel.o'); \
	if [ -n "$$untracked" ]; then echo "generated files not committed: $$untracked"; exit 1; fi

# -p 1: the bench and lab tests pin traffic generators to CPUs and pace
# them; on a 2-core machine another package's tests running beside them
# starve the generator and its trial is (rightly) invalid.
unit:
	$(GO) test -count=1 -p 1 ./...

## fuzz: run the data path fuzz target for $(FUZZTIME)
fuzz:
	$(GO) test -count=1 -run '^$$' -fuzz FuzzDatapath -fuzztime $(FUZZTIME) ./internal/datapath

## bench: per-packet cost of the data path through BPF_PROG_RUN
bench:
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 200000x ./internal/dpcost

clean:
	rm -rf bin
