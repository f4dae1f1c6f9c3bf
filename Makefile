# tiermem: the newcomer path.
#
#   make demo    set everything up, reproduce Colloid Fig. 1 (quick), run the runtime demo
#   make test    set everything up, run the Rust and Python test suites (what CI runs)
#
# Other targets: setup, test-fast (skips heavy end-to-end tests), bench (BENCH="sim ..."
# runs only those steps), docs-results,
# lock (regenerate requirements-dev.lock), clean-venv, help.
#
# One cargo profile everywhere (release): `make setup`, `make test`, `make bench` and the
# Python extension share one set of compiled dependencies in target/release.

SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

# cargo/rustup install into ~/.cargo/bin, which a non-login shell may not have on PATH.
export PATH := $(HOME)/.cargo/bin:$(PATH)

PYTHON3  ?= python3
CARGO    ?= cargo
VENV     := .venv
PY       := $(VENV)/bin/python
BIN      := target/release/tiermem
OUT      ?= out

# The Rust CLI draws its PNGs with `$TIERMEM_PYTHON -m tiermem.plots KIND DIR`.
export TIERMEM_PYTHON := $(CURDIR)/$(VENV)/bin/python

VENV_STAMP   := $(VENV)/.tiermem-deps.stamp
NATIVE_STAMP := $(VENV)/.tiermem-native.stamp
# What the native module is built from (any crate: tiermem-py's dependencies may grow).
RUST_INPUTS  := Cargo.toml Cargo.lock pyproject.toml $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null)

.PHONY: help setup setup-ray apt-deps venv build native demo reproduce-all test test-fast test-rust test-python lint bench docs-results lock clean-venv

help:
	@echo "make demo          set up, then reproduce colloid-fig1 (quick) and run the runtime demo"
	@echo "make test          set up, then cargo test + pytest (CI runs this)"
	@echo "make test-fast     same, skipping heavy end-to-end tests (TIERMEM_SKIP_E2E=1)"
	@echo "make lint          clippy -D warnings, the SAFETY-comment check, ruff"
	@echo "make setup         apt packages, .venv with pinned deps, release build, Python extension"
	@echo "make bench         run scripts/bench.sh (bench/*/run.sh + timed reproductions)"
	@echo "make docs-results  regenerate docs/results.md from $(OUT)/**/summary.json and the bench/*/results.md pages"
	@echo "make reproduce-all every paper's figures (QUICK=1 for the quick suite) into $(OUT)/, then docs-results"
	@echo "make setup-ray     make sure the venv has Ray (the dev lock pins it; tiermem[ray] for users)"

# ---- setup ---------------------------------------------------------------------------

setup: apt-deps venv build native
	@echo "setup: done ($(BIN), $(VENV) with tiermem importable)"

apt-deps:
	@bash scripts/install-deps.sh

venv: $(VENV_STAMP)

$(VENV_STAMP): requirements-dev.lock
	@test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check --no-input -q -r requirements-dev.lock
	@touch $@

build:
	$(CARGO) build --release

native: $(NATIVE_STAMP)

# maturin builds crates/tiermem-py in release into the shared target/ and installs the
# package in development mode (python/ on the path, _native*.so next to the sources).
$(NATIVE_STAMP): $(VENV_STAMP) $(RUST_INPUTS)
	VIRTUAL_ENV=$(CURDIR)/$(VENV) PATH=$(CURDIR)/$(VENV)/bin:$$PATH \
	    $(VENV)/bin/maturin develop --release --quiet
	$(PY) -c "import tiermem, tiermem._native"
	@touch $@

# The Ray backend of sweeps and `reproduce all --ray`: pinned in requirements-dev.txt (so
# `make setup` installs it); users of the package get it with `pip install tiermem[ray]`.
setup-ray: venv
	@$(PY) -c "import ray" 2>/dev/null || $(PY) -m pip install --disable-pip-version-check -q "$$(grep '^ray==' requirements-dev.txt)"
	@$(PY) -c "import ray; print('setup-ray: ray', ray.__version__)"

# ---- demo ----------------------------------------------------------------------------

demo: setup
	$(BIN) reproduce colloid-fig1 --quick --out $(OUT)/colloid-fig1
	@if [ -f scripts/runtime-demo.sh ]; then bash scripts/runtime-demo.sh; \
	 else echo "demo: scripts/runtime-demo.sh not present yet, skipping the runtime demo"; fi

# ---- tests ---------------------------------------------------------------------------

# --release: the same profile as `make setup`, so only the test harnesses are compiled
# (simulations are slow unoptimised). tiermem-py has no Rust tests (tests/python covers it).
CARGO_TEST := $(CARGO) test --workspace --exclude tiermem-py --release --no-fail-fast
# pytest exits 5 when it collects nothing: treat that as a failure, never as a pass.
PYTEST := $(PY) -m pytest -q tests/python; prc=$$?; \
	  if [ $$prc -eq 5 ]; then echo "pytest collected no tests" >&2; prc=1; fi; [ $$prc -eq 0 ]

# Both suites and the linters always run; the target fails if any did.
test: setup
	@rc=0; \
	 echo "== lint"; $(MAKE) --no-print-directory lint || rc=1; \
	 echo "== cargo test"; $(CARGO_TEST) || rc=1; \
	 echo "== pytest"; { $(PYTEST); } || rc=1; \
	 if [ $$rc -ne 0 ]; then echo "make test: FAILED (see above)" >&2; fi; exit $$rc

# TIERMEM_SKIP_E2E=1: heavy end-to-end tests (real programs, VMs, full simulations) skip.
test-fast: export TIERMEM_SKIP_E2E := 1
test-fast: test

# clippy with warnings denied, a `// SAFETY:` comment on every unsafe block, ruff on Python.
lint: setup
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy
	@rc=0; \
	 $(CARGO) clippy --release --workspace --all-targets -- -D warnings || rc=1; \
	 $(PYTHON3) scripts/check_safety.py || rc=1; \
	 $(VENV)/bin/ruff check python tests/python scripts || rc=1; \
	 exit $$rc

test-rust: setup
	$(CARGO_TEST)

test-python: setup
	@$(PYTEST)

# ---- bench and docs ------------------------------------------------------------------

bench: setup
	bash scripts/bench.sh $(BENCH)

# Every paper's figures (resumable: a figure whose summary.json matches its config hash is
# reused), then the results page. RAY=HOST:PORT spreads the figures over a Ray cluster.
reproduce-all: setup
	$(BIN) reproduce all $(if $(QUICK),--quick) $(if $(RAY),--ray $(RAY)) --out $(OUT)
	$(MAKE) --no-print-directory docs-results

# out/bench holds `make bench` runs: timings, not results.
docs-results: venv
	PYTHONPATH=$(CURDIR)/python $(PY) -m tiermem.results_page $(OUT) docs/results.md --exclude bench \
	    --bench bench/runtime/results.md --bench bench/tierscape/kv.md \
	    --bench bench/tierscape/kv-memcached-rounds.md --bench bench/reproduce/results.md \
	    --bench bench/kernel_baseline/results.md

# ---- maintenance ---------------------------------------------------------------------

# Re-resolve requirements-dev.txt in a scratch venv and freeze it into the lock file.
lock:
	rm -rf $(VENV)-lock && $(PYTHON3) -m venv $(VENV)-lock
	$(VENV)-lock/bin/pip install --disable-pip-version-check -q -r requirements-dev.txt
	{ echo "# Generated by \`make lock\` from requirements-dev.txt (pip freeze of a fresh venv, Python 3.11)."; \
	  echo "# Installed by \`make setup\`. Do not edit by hand."; \
	  $(VENV)-lock/bin/pip freeze --disable-pip-version-check; } > requirements-dev.lock
	rm -rf $(VENV)-lock

clean-venv:
	rm -rf $(VENV) python/tiermem/_native*.so
