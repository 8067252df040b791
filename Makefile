# fsbench: the two commands a new user needs are `make run` and `make test` (as root, Debian).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Debian packages fsbench drives: filesystem tools, workload tools, the kernel source and
# what building it needs. `fsbench doctor` tells what each one is for.
DEB_PACKAGES := e2fsprogs xfsprogs btrfs-progs util-linux mount python3 python3-venv quota btrfs-compsize \
	qemu-system-x86 qemu-utils debootstrap \
	tar xz-utils fio fsmark dbench postmark sysbench stress-ng gzip \
	linux-source make gcc flex bison bc libelf-dev libssl-dev
STAMP_PY := $(VENV)/.stamp-python
# The native engine (engine/, Rust >= 1.88): cargo from PATH or rustup's default place.
CARGO ?= $(shell command -v cargo 2>/dev/null || ls $(HOME)/.cargo/bin/cargo 2>/dev/null)

.PHONY: install apt engine run test lint clean

install: apt $(STAMP_PY) engine

# Checked every time (one dpkg-query per package, well under a second); apt runs only
# when something is missing.
apt:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "apt: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(STAMP_PY): pyproject.toml
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

test: install
	@if [ -n "$(CARGO)" ]; then $(CARGO) test --quiet --manifest-path engine/Cargo.toml; fi
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
