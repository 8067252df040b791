# fsbench: the two commands a new user needs are `make run` and `make test` (as root, Debian).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The Debian packages come from fsbench itself (src/fsbench/execute/packages.py: the filesystem
# catalogue, the workloads' tools, and a short list of the rest, each with its reason), so
# the venv comes first; making it needs only these.
BOOTSTRAP_PACKAGES := python3 python3-venv
STAMP_PY := $(VENV)/.stamp-python
# The native engine (engine/, Rust >= 1.88): cargo from PATH or rustup's default place.
CARGO ?= $(shell command -v cargo 2>/dev/null || ls $(HOME)/.cargo/bin/cargo 2>/dev/null)

.PHONY: install bootstrap apt apt-run engine run test check cargo-test lint clean

install: apt engine

# apt-get install those of the packages named on stdin that are not installed yet (one
# dpkg-query each: well under a second); apt-get update only when something is missing.
APT_MISSING = missing=""; for p in $$(cat); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "apt: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

bootstrap:
	@echo $(BOOTSTRAP_PACKAGES) | { $(APT_MISSING); }

# Checked every time; the list is fsbench's own (python -m fsbench.execute.packages).
apt: $(STAMP_PY)
	@pkgs=$$($(BIN)/python -m fsbench.execute.packages) || exit 1; echo "$$pkgs" | { $(APT_MISSING); }

$(STAMP_PY): pyproject.toml | bootstrap
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

# cargo decides what is stale: a second build is a no-op of well under a second.
engine:
	@if [ -n "$(CARGO)" ]; then \
	  $(CARGO) build --release --quiet --manifest-path engine/Cargo.toml; \
	else \
	  echo "engine: no cargo (Rust >= 1.88, from rustup): fileserver/varmail/webserver unavailable"; \
	fi

# `make run` installs what the default comparison needs (its filesystems' and workloads'
# tools), not the whole list: a fresh machine's first table does not wait for QEMU, the
# database servers or the kernel source. `make install` (and `make test`) install the rest.
apt-run: $(STAMP_PY)
	@pkgs=$$($(BIN)/python -m fsbench.execute.packages run) || exit 1; echo "$$pkgs" | { $(APT_MISSING); }

run: apt-run engine
	$(BIN)/fsbench run

# No part of the suite is skipped for a missing tool: without cargo the engine's tests
# cannot run, so `make test` fails. As root (the suite's normal case) the engine's tests
# that need root run too; as another user cargo counts them as ignored.
#
# `make test` is the whole suite (what CI runs); `make check` the edit loop's tier: the
# engine's tests, the unit tests and the integration tests not marked slow (minutes, not
# half an hour). Both run pytest on three workers (pytest-xdist), one more than this
# project's machine has CPUs: with two, its CPUs sat idle while tests waited on guests,
# servers and disks (docs/development.md has both runs). Tests that share a guest, a kernel
# build or the machine's sysctls are grouped (xdist_group) and run on one worker in turn
# (tests/conftest.py). Each prints where its time went: the slowest tests, the shared
# builds (guest images, kernels, the Debian source) and make's own steps, timed into
# $(STEPS).
STEPS := build/make-steps.jsonl
PYTEST_ARGS ?= -n 3 --dist loadgroup --no-loadscope-reorder --durations=15
# $(call timed,NAME,COMMAND): run COMMAND; its seconds go into $(STEPS) as NAME.
timed = t0=$$(date +%s%N); $(2); rc=$$?; \
	ms=$$(( ($$(date +%s%N) - t0) / 1000000 )); \
	printf '{"name": "%s", "seconds": %d.%03d}\n' "$(1)" $$((ms / 1000)) $$((ms % 1000)) >> $(STEPS); \
	exit $$rc

test: timed-install
	@$(call timed,cargo test (engine),$(MAKE) --no-print-directory cargo-test)
	FSBENCH_MAKE_STEPS=$(STEPS) $(BIN)/python -m pytest -q $(PYTEST_ARGS)

check: timed-install
	@$(call timed,cargo test (engine),$(MAKE) --no-print-directory cargo-test)
	FSBENCH_MAKE_STEPS=$(STEPS) $(BIN)/python -m pytest -q -m "not slow" $(PYTEST_ARGS)

# `make install`, timed: the venv and the Debian packages, then the engine.
.PHONY: timed-install
timed-install:
	@mkdir -p $(dir $(STEPS)) && rm -f $(STEPS)
	@$(call timed,venv and apt packages (make apt),$(MAKE) --no-print-directory apt)
	@$(call timed,engine (cargo build --release),$(MAKE) --no-print-directory engine)

cargo-test:
	@if [ -z "$(CARGO)" ]; then \
	  echo "make test: no cargo: the engine needs Rust >= 1.88 (install it with rustup: https://rustup.rs)" >&2; \
	  exit 1; fi
	$(CARGO) test --quiet --manifest-path engine/Cargo.toml -- $$([ "$$(id -u)" = 0 ] && echo --include-ignored)

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	@if [ -n "$(CARGO)" ]; then \
	  $(CARGO) fmt --manifest-path engine/Cargo.toml --check && \
	  $(CARGO) clippy --quiet --manifest-path engine/Cargo.toml -- -D warnings; fi

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache engine/target
