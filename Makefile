# synthpipe: small Unix filters that turn prompts into training data with exact
# token accounting. `make help` lists the targets.

GO      ?= go
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  := $(DESTDIR)$(PREFIX)/bin
MANDIR  := $(DESTDIR)$(PREFIX)/share/man
BASHCOMPDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
# The recipes (scripts/'s runnable pipelines, whose crontab and sbatch lines
# name this folder): /usr/local/share/synthpipe/scripts by default.
RECIPEDIR   := $(DESTDIR)$(PREFIX)/share/synthpipe/scripts
RECIPES     := run-dataset.sh fanout.sh several-servers.sh slurm/run-array.sbatch slurm/server.sbatch
TOOLS   := $(notdir $(wildcard cmd/*))

.PHONY: help build test go-test test-loaded race vet fmt-check tidy-check staticcheck man bench stress demo install uninstall clean

help:
	@echo "make build     build every tool into bin/"
	@echo "make test      vet, gofmt, go.mod tidy and staticcheck checks, unit and end-to-end tests"
	@echo "make test-loaded  the unit and end-to-end tests RUNS times (default 10) with every core busy"
	@echo "make demo      run the whole pipeline on the bundled prompts against the simulator"
	@echo "make bench     benchmarks side by side with their reference tools"
	@echo "make stress    the long reliability tests (crash/resume, fault storms, dying servers)"
	@echo "make race      the library's tests under the race detector (about 5 minutes)"
	@echo "make man       regenerate man/ from the CLI definitions"
	@echo "make install   install binaries, man pages, completions and the recipes (scripts/) under PREFIX (DESTDIR honoured)"
	@echo "make clean     remove build output"

# urfave_cli_no_docs leaves out urfave/cli's Markdown and man-page export
# (App.ToMan, App.ToMarkdown), which no tool calls: the tools then do not
# link the Markdown renderer, whose package init every run would pay.
# scripts/genman renders man/ through lib/toolset, without the tag.
build:
	$(GO) build -tags urfave_cli_no_docs -o bin/ ./cmd/...

# The checks run beside the tests (make test fails if either fails): the
# tests spend much of their time waiting on processes and servers, which
# the checks fill; each job's output is printed whole when it ends. go vet
# ./... checks every package, tests included: -vet=off spares go test its
# own pass of a subset of the same checks.
test:
	bash scripts/ensure-test-deps.sh
	$(MAKE) --no-print-directory -j5 --output-sync=target vet fmt-check tidy-check staticcheck go-test

go-test:
	$(GO) test -vet=off -timeout 30m ./...

# The suite must pass on a loaded machine every time: RUNS runs of it with
# stress-ng (or busy loops) on every core. Long: the lead runs it before a
# release, not on every change.
RUNS ?= 10
test-loaded:
	bash scripts/ensure-test-deps.sh
	bash scripts/test-loaded.sh $(RUNS)

# The library's tests under the race detector: the concurrency (readers
# ahead, worker pools, the poller, tokenizer loads) lives in lib/. Not part
# of make test, whose time it would double.
race:
	bash scripts/ensure-test-deps.sh
	$(GO) test -race -timeout 60m ./lib/...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l cmd lib scripts tests); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# go.mod and go.sum list exactly what the code imports: a dependency added by
# hand, or left behind, fails here with the diff that `go mod tidy` would make.
tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod is not tidy: run 'go mod tidy' and commit the result"; exit 1; }

# staticcheck at the version pinned in go.mod's tool line; checks turned off
# are in staticcheck.conf files, each with its reason.
staticcheck:
	$(GO) tool staticcheck ./...

man:
	$(GO) run ./scripts/genman man

stress:
	SYNTHPIPE_STRESS=1 $(GO) test ./tests/ -run Reliability -timeout 60m

bench: build
	bash scripts/bench.sh

demo: build
	bash scripts/demo.sh

install: build
	install -d $(BINDIR) $(MANDIR)/man1 $(MANDIR)/man7 $(BASHCOMPDIR) $(ZSHCOMPDIR) $(RECIPEDIR)/slurm
	for r in $(RECIPES); do install -m 0755 scripts/$$r $(RECIPEDIR)/$$r; done
	for t in $(TOOLS); do install -m 0755 bin/$$t $(BINDIR)/$$t; done
	install -m 0644 man/*.1 $(MANDIR)/man1/
	install -m 0644 man/*.7 $(MANDIR)/man7/
	$(GO) run ./scripts/gencompletion bash $(BASHCOMPDIR)
	$(GO) run ./scripts/gencompletion zsh $(ZSHCOMPDIR)

uninstall:
	for t in $(TOOLS); do rm -f $(BINDIR)/$$t $(MANDIR)/man1/$$t.1 $(BASHCOMPDIR)/$$t $(ZSHCOMPDIR)/_$$t; done
	rm -f $(MANDIR)/man7/synthpipe-records.7 $(MANDIR)/man7/synthpipe-status.7
	for r in $(RECIPES); do rm -f $(RECIPEDIR)/$$r; done
	rmdir $(RECIPEDIR)/slurm $(RECIPEDIR) $(DESTDIR)$(PREFIX)/share/synthpipe 2>/dev/null || true

clean:
	rm -rf bin
