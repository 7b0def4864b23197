# xlb: XDP/eBPF L4 load balancer. `make test` is what CI runs.
GO ?= go
GOFLAGS ?=
BPF_SOURCES := $(shell find bpf -name '*.c' -o -name '*.h')
# Fuzz budgets are counts of executions, not durations: with a duration,
# Go 1.26's fuzz coordinator can end a clean run with "context deadline
# exceeded" (golang/go#75804, fixed in Go 1.27), and a loaded machine
# spends a short duration on start-up alone. Each new interesting input is
# minimized for FUZZMINIMIZE executions instead of Go's default 60 s,
# which stalled a worker for most of a short run.
FUZZTIME ?= 200000x
FUZZTIME_PARSERS ?= 30000x
FUZZMINIMIZE ?= 100x
# The committed BPF objects are built with Debian clang 14.0.6 (scripts/deps.sh
# installs clang-14); another major version emits other bytes, so
# check-generated insists on this one.
BPF_CC ?= clang-14
BPF_CC_MAJOR := 14

.PHONY: all deps demo generate build test check-clang check-generated lint unit fuzz bench clean man install install-files uninstall

# Where make install puts things: $(DESTDIR)$(PREFIX)/sbin/xlb (the
# path dist/xlb.service runs), the man page, the shell completion, the
# unit, the dashboard, the alert rules and the examples.
PREFIX ?= /usr/local
DESTDIR ?=
XLB ?= bin/xlb
INSTALLED := $(PREFIX)/sbin/xlb $(PREFIX)/share/man/man8/xlb.8 \
	$(PREFIX)/share/bash-completion/completions/xlb /etc/systemd/system/xlb.service \
	$(PREFIX)/share/xlb/grafana/xlb-dashboard.json $(PREFIX)/share/xlb/prometheus/xlb-rules.yml \
	$(addprefix $(PREFIX)/share/doc/xlb/examples/,$(notdir $(wildcard examples/*.yaml)))

all: build

## deps: install what the build, the tests and the demo need (root, Debian)
deps:
	./scripts/deps.sh

## demo: build, bring the lab up, balance TCP and UDP through xlb, tear down
demo: deps build
	./bin/xlb lab demo

## generate: compile the BPF C with $(BPF_CC) and regenerate the bpf2go Go files
# (the flags are in scripts/bpf2go.sh, which every //go:generate line calls)
generate:
	BPF2GO_CC=$(BPF_CC) $(GO) generate ./internal/...

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

# check-clang: fail, naming the clang needed, when $(BPF_CC) is another one
check-clang:
	@v=$$($(BPF_CC) --version 2>/dev/null | head -n1); \
	case "$$v" in *" version $(BPF_CC_MAJOR)."*) ;; \
	*) echo "check-generated needs clang $(BPF_CC_MAJOR) (the committed objects are built with Debian clang 14.0.6);"; \
	   echo "BPF_CC=$(BPF_CC) is: $${v:-not found}. Run make deps (installs clang-14) or set BPF_CC."; exit 1;; \
	esac

## check-generated: regenerate and fail if the committed files differ
check-generated: check-clang
	$(MAKE) --no-print-directory generate
	@git diff --exit-code -- '*_bpfel.go' '*_bpfel.o' || \
		{ echo "generated files differ from the committed ones: run make generate and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- '*_bpfel.go' '*_bpfel.o'); \
	if [ -n "$$untracked" ]; then echo "generated files not committed: $$untracked"; exit 1; fi

# -p 1: the bench and lab tests pin traffic generators to CPUs and pace
# them; on a 2-core machine another package's tests running beside them
# starve the generator and its trial is (rightly) invalid.
unit:
	$(GO) test -count=1 -p 1 ./...

## fuzz: run the data path fuzz target for $(FUZZTIME) executions, then
## each input parser's (configuration, exec check commands, ipvsadm,
## keepalived) for $(FUZZTIME_PARSERS); go test -fuzz takes one target at
## a time
FUZZFLAGS = -count=1 -run '^$$' -fuzzminimizetime $(FUZZMINIMIZE)
fuzz:
	$(GO) test $(FUZZFLAGS) -fuzz FuzzDatapath -fuzztime $(FUZZTIME) ./internal/datapath
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzConfig$$' -fuzztime $(FUZZTIME_PARSERS) ./internal/config
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzSplitCommand$$' -fuzztime $(FUZZTIME_PARSERS) ./internal/config
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME_PARSERS) ./internal/ipvsadm
	$(GO) test $(FUZZFLAGS) -fuzz '^FuzzImport$$' -fuzztime $(FUZZTIME_PARSERS) ./internal/keepalived

## man: write docs/xlb.8 from the command tree (a test keeps it current)
man:
	$(GO) run ./cmd/xlb man > docs/xlb.8

## install: build and install xlb (PREFIX=/usr/local, DESTDIR for packaging);
## /etc/xlb/xlb.yaml is installed from examples/xlb.yaml only when absent
install: build install-files

install-files:
	install -D -m 0755 $(XLB) $(DESTDIR)$(PREFIX)/sbin/xlb
	install -D -m 0644 docs/xlb.8 $(DESTDIR)$(PREFIX)/share/man/man8/xlb.8
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	$(XLB) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/xlb
	install -D -m 0644 dist/xlb.service $(DESTDIR)/etc/systemd/system/xlb.service
	install -D -m 0644 dist/grafana/xlb-dashboard.json $(DESTDIR)$(PREFIX)/share/xlb/grafana/xlb-dashboard.json
	install -D -m 0644 dist/prometheus/xlb-rules.yml $(DESTDIR)$(PREFIX)/share/xlb/prometheus/xlb-rules.yml
	install -d $(DESTDIR)$(PREFIX)/share/doc/xlb/examples
	install -m 0644 examples/*.yaml $(DESTDIR)$(PREFIX)/share/doc/xlb/examples/
	@if [ ! -e $(DESTDIR)/etc/xlb/xlb.yaml ]; then install -D -m 0644 examples/xlb.yaml $(DESTDIR)/etc/xlb/xlb.yaml; \
	else echo "$(DESTDIR)/etc/xlb/xlb.yaml exists: left as it is"; fi

## uninstall: remove what install put, except /etc/xlb/xlb.yaml (yours)
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(PREFIX)/share/doc/xlb/examples $(DESTDIR)$(PREFIX)/share/doc/xlb \
		$(DESTDIR)$(PREFIX)/share/xlb/grafana $(DESTDIR)$(PREFIX)/share/xlb/prometheus $(DESTDIR)$(PREFIX)/share/xlb 2>/dev/null
	@echo "kept $(DESTDIR)/etc/xlb/xlb.yaml (your configuration): remove it yourself if you want it gone"

## bench: per-packet cost of the data path through BPF_PROG_RUN
bench:
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 200000x ./internal/lab/bench/dpcost

clean:
	rm -rf bin
