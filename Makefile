# gradtrace: two commands on a fresh Debian machine (Python 3.11, node/npm, make, apt as root).
#   make run    set up .venv and the front end, then serve http://127.0.0.1:8000
#   make test   also install what the tests need (Debian chromium, postgresql), then run it all
# The Dockerfile calls the same `install` and `frontend` targets: there is one recipe.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PIP    := $(VENV)/bin/pip
PY     := $(VENV)/bin/python
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=

.PHONY: run install native contract install-test frontend system-test-deps lint test test-fast bench clean

run: install frontend
	$(VENV)/bin/gradtrace serve

# pip resolves torch==2.13.0 to the CPU build; pip's cap on torch (if any) is left in place.
$(VENV)/.stamp-install: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	touch $@

# The C++ capture core (gradtrace/capture/_native.cpp and its parts in cxx/), compiled against the installed torch.
# It needs a C++ compiler and Python's headers; both are installed from Debian when missing.
$(VENV)/.stamp-native: $(VENV)/.stamp-install backend/gradtrace/capture/_native.cpp $(wildcard backend/gradtrace/capture/cxx/*.h) backend/gradtrace/capture/build_native.py
	@missing=""; \
	command -v g++ >/dev/null 2>&1 || missing="$$missing g++"; \
	$(PY) -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
	  || missing="$$missing python3-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@# by path, not -m: importing gradtrace.capture would build a first-use copy of the core too
	$(PY) backend/gradtrace/capture/build_native.py
	touch $@

native: $(VENV)/.stamp-native

# docs/CONTRACT.md's field tables and the core's keys (capture/cxx/keys.h), generated from the
# models' fields and descriptions (NOTE [the contract's tables come from the models] in
# schema/contract_doc.py); tests/test_contract.py fails when the committed copies differ.
contract: $(VENV)/.stamp-install
	$(PY) -m gradtrace.schema.contract_doc
	$(PY) -m gradtrace.schema.cxx_keys

install: $(VENV)/.stamp-install $(VENV)/.stamp-native

$(VENV)/.stamp-test: $(VENV)/.stamp-install pyproject.toml
	$(PIP) install --quiet -e '.[test]'
	touch $@

install-test: $(VENV)/.stamp-test $(VENV)/.stamp-native

frontend/node_modules/.stamp: frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund --loglevel=error
	touch $@

frontend: frontend/node_modules/.stamp
	cd frontend && npm run --silent build

# Debian packages the suite drives for real: Chromium for Playwright, PostgreSQL for storage,
# redis-server for the queue, uidmap (newuidmap) for the rootless worker (tests/scale), strace
# for the seccomp allow-list's measurement (tests/sandbox/test_seccomp_allowlist.py).
system-test-deps:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v newuidmap >/dev/null 2>&1 || missing="$$missing uidmap"; \
	command -v strace >/dev/null 2>&1 || missing="$$missing strace"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

lint: install-test
	$(VENV)/bin/ruff check backend tests bench
	$(VENV)/bin/mypy

# The goldens run a second time on torch's plain kernels (ATEN_CPU_CAPABILITY=default): the
# main run uses this CPU's best (AVX2/AVX-512), so a golden that pins one kernel's rounding fails.
GOLDEN_TESTS := tests/capture/test_golden.py tests/capture/test_oracle.py tests/test_docdiff.py
# Every capture test (goldens, oracle and library modules among them) runs on each kernel set:
# the main run uses the C++ core, this one its Python twin (NOTE [one recorder, two kernel sets]
# in backend/gradtrace/capture/pycore.py).

# The suite runs in two parts (NOTE [fast suite, then the rest] in tests/conftest.py): the fast
# one (in-process tests and the service over HTTP) first, then the tests that drive real
# components for long (Chromium, JupyterLab, the sandbox, the queue fleet, PostgreSQL). Each
# part ends with a table of where its time went. `make test-fast` runs the first part alone.
PYTEST_RUN = rc=0; $(VENV)/bin/pytest $(1) $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; [ $$rc -eq 0 ]

test: install-test frontend system-test-deps lint
	cd frontend && npm test --silent
	@ATEN_CPU_CAPABILITY=default $(VENV)/bin/pytest -q -p no:cacheprovider $(GOLDEN_TESTS) || exit 1
	@GRADTRACE_KERNELS=python $(VENV)/bin/pytest -q -p no:cacheprovider tests/capture || exit 1
	@$(call PYTEST_RUN,-m "not slow")
	@$(call PYTEST_RUN,-m slow)

test-fast: install-test frontend lint
	@$(call PYTEST_RUN,-m "not slow")

# Benchmarks compare against torchviz and Graphviz's dot, installed only for them.
bench: install-test frontend system-test-deps
	$(PIP) install --quiet -e '.[test,bench]'
	command -v dot >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq graphviz; }
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) frontend/node_modules frontend/dist data tests/artifacts backend/gradtrace/capture/_native*.so
