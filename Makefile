# evalbatch: `make run` grades the samples, `make test` runs every test. Both set up .venv first:
# `make run` with what the default (local) engine needs, `make test` adds the dev and Ray extras;
# `make inspect` adds only Inspect's log reader (the README's tour, step 7).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
INSPECT_STAMP := $(VENV)/.installed-inspect

.PHONY: help setup native native-deps browser run inspect test test-duckdb check check-lint check-tests lint fmt samples bench clean

help:
	@echo "make run      set up .venv (the default engine only) and grade data/samples into out/samples"
	@echo "make inspect  add Inspect's log reader (the inspect extra) to .venv: ingest reads Inspect logs"
	@echo "make test     add the dev and Ray extras to .venv and run the whole test suite (--run-slow)"
	@echo "make test-duckdb  the payload-reading tests again on the DuckDB extractor (CI runs both)"
	@echo "make check    the fast loop: lint, then the fast set (bare pytest: no slow tests), a worker per core"
	@echo "make lint     ruff check + mypy (config in pyproject.toml)"
	@echo "make fmt      ruff format + fix"
	@echo "make native   build the native extractor (simdjson); without it payloads are parsed by DuckDB"
	@echo "make samples  regenerate data/samples (deterministic)"
	@echo "make bench    time floor / evalbatch run / reference on both shapes of log"
	@echo "              (EVENTS=10M by default, SHAPE=both|small|large,"
	@echo "              BENCH_ARGS=--skip-reference, --memory for 100M, --repeat 3, ...)"

setup: $(STAMP) native

# The native extractor (E-108): glue over Debian's libsimdjson-dev, built beside its source. Where
# the compiler or the library is missing they are installed (as `make test` installs Chromium);
# where that fails (another platform, no compiler: CXX=false) evalbatch runs on the DuckDB path
# and this says so in one line. The pinned simdjson is Debian 12's.
CXX ?= g++
SIMDJSON_DEB ?= 3.0.1-1
NATIVE_SRC := evalbatch/extract/native_scan.cpp
NATIVE_LIB := evalbatch/extract/_native_scan.so
NATIVE_FLAGS := -O3 -std=c++17 -shared -fPIC -pthread -Wall -Wextra

native: $(NATIVE_LIB)

native-deps:
	@printf '#include <simdjson.h>\n' | $(CXX) -x c++ -std=c++17 -fsyntax-only - >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  command -v apt-get >/dev/null 2>&1 && $$SUDO apt-get update -qq >/dev/null 2>&1 && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq g++ \
	    libsimdjson-dev=$(SIMDJSON_DEB) >/dev/null 2>&1; true; }

$(NATIVE_LIB): $(NATIVE_SRC)
	@$(MAKE) --no-print-directory native-deps
	@$(CXX) $(NATIVE_FLAGS) $(NATIVE_SRC) -o $@ -lsimdjson 2>/dev/null || { rm -f $@; \
	  echo "native extractor not built (no C++ compiler or libsimdjson-dev): payloads are parsed by DuckDB"; }

# the package and what the default engine needs: no test tools, no Ray
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e .
	touch $(STAMP)

# the test, lint and notebook tools, Ray (tests/test_ray.py and mypy read the Ray engine) and
# Inspect (tests/test_inspect_logs.py writes its logs with Inspect's own mock model and writer)
$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev,ray,inspect]'
	touch $(DEV_STAMP) $(INSPECT_STAMP)

# Inspect's log reader alone (E-111), pinned as the rest: what `evalbatch ingest` needs to read an
# Inspect eval log, and nothing else (`make test` installs it too)
$(INSPECT_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[inspect]'
	touch $(INSPECT_STAMP)

inspect: $(INSPECT_STAMP)

run: $(STAMP) native
	$(BIN)/evalbatch run data/samples/events --suites data/samples/suites --out out/samples; \
	  code=$$?; if [ $$code -ne 0 ] && [ $$code -ne 3 ]; then exit $$code; fi

# the report test renders HTML in Debian's headless Chromium
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

# bare pytest skips the tests marked slow (tests/conftest.py): --run-slow runs them too, in one
# process (-n 0): the slow families start clusters, browsers and workers of their own
test: $(DEV_STAMP) native browser
	$(BIN)/python -m pytest --run-slow -n 0

# the families that read payloads, again on the DuckDB reference extractor (E-108): `make test`
# runs them on the native one where it is built, and both must give one answer. The library never
# reads EVALBATCH_EXTRACTOR (E-130): the commands do, and tests/conftest.py for library calls
REFERENCE_PATH_TESTS := tests/test_fuzz.py tests/test_fault_injection.py tests/test_reference.py \
  tests/test_samples.py tests/test_rules_extract.py tests/test_rules_inputs.py \
  tests/test_delegates.py tests/test_sql_golden.py
test-duckdb: $(DEV_STAMP)
	EVALBATCH_EXTRACTOR=duckdb $(BIN)/python -m pytest --run-slow -n 2 $(REFERENCE_PATH_TESTS)

# the fast loop: lint beside the fast set, what bare pytest runs (the slow families, marked `slow`,
# are left to `make test`), spread over a worker process per core
check: $(DEV_STAMP) native
	@$(MAKE) --no-print-directory -j2 check-lint check-tests

check-lint:
	$(BIN)/ruff check evalbatch tests data/samples bench
	$(BIN)/mypy

check-tests:
	$(BIN)/python -m pytest

lint: $(DEV_STAMP)
	$(BIN)/ruff check evalbatch tests data/samples bench
	$(BIN)/mypy

fmt: $(DEV_STAMP)
	$(BIN)/ruff format evalbatch tests data/samples bench
	$(BIN)/ruff check --fix evalbatch tests data/samples bench

samples: $(STAMP)
	$(BIN)/python data/samples/make_samples.py

# the reference takes about 8 minutes at 10M (shape A): BENCH_ARGS=--skip-reference leaves it out;
# BENCH_ARGS=--memory is the 100M peak-RSS run (no reference); EVENTS unset: 10M (100M with --memory)
EVENTS ?=
SHAPE ?= both
BENCH_ARGS ?=
bench: $(STAMP) native
	$(BIN)/python bench/run.py $(if $(EVENTS),--events $(EVENTS)) --shape $(SHAPE) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) out .pytest_cache $(NATIVE_LIB)
