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

.PHONY: install bootstrap apt engine run test lint clean

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

run: install
	$(BIN)/fsbench run

# No part of the suite is skipped for a missing tool: without cargo the engine's tests
# cannot run, so `make test` fails. As root (the suite's normal case) the engine's tests
# that need root run too; as another user cargo counts them as ignored.
test: install
	@if [ -z "$(CARGO)" ]; then \
	  echo "make test: no cargo: the engine needs Rust >= 1.88 (install it with rustup: https://rustup.rs)" >&2; \
	  exit 1; fi
	$(CARGO) test --quiet --manifest-path engine/Cargo.toml -- $$([ "$$(id -u)" = 0 ] && echo --include-ignored)
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	@if [ -n "$(CARGO)" ]; then \
	  $(CARGO) fmt --manifest-path engine/Cargo.toml --check && \
	  $(CARGO) clippy --quiet --manifest-path engine/Cargo.toml -- -D warnings; fi

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache engine/target
