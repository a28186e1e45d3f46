# evalbatch: `make run` grades the samples, `make test` runs every test. Both set up .venv first:
# `make run` with what the default (local) engine needs, `make test` adds the dev and Ray extras.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: help setup browser run test check check-lint check-tests lint fmt samples bench clean

help:
	@echo "make run      set up .venv (the default engine only) and grade data/samples into out/samples"
	@echo "make test     add the dev and Ray extras to .venv and run the whole test suite"
	@echo "make check    the fast loop: lint, then every test not marked slow, on two workers"
	@echo "make lint     ruff check + mypy (config in pyproject.toml)"
	@echo "make fmt      ruff format + fix"
	@echo "make samples  regenerate data/samples (deterministic)"
	@echo "make bench    time floor / evalbatch run / reference on both shapes of log"
	@echo "              (EVENTS=10M by default, SHAPE=both|small|large,"
	@echo "              BENCH_ARGS=--skip-reference, --memory for 100M, --repeat 3, ...)"

setup: $(STAMP)

# the package and what the default engine needs: no test tools, no Ray
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e .
	touch $(STAMP)

# the test, lint and notebook tools, and Ray (tests/test_ray.py and mypy read the Ray engine)
$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev,ray]'
	touch $(DEV_STAMP)

run: $(STAMP)
	$(BIN)/evalbatch run data/samples/events --suites data/samples/suites --out out/samples; \
	  code=$$?; if [ $$code -ne 0 ] && [ $$code -ne 3 ]; then exit $$code; fi

# the report test renders HTML in Debian's headless Chromium
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

test: $(DEV_STAMP) browser
	$(BIN)/python -m pytest

# the fast loop: lint beside the tests that run in seconds (the slow families, marked `slow`, are
# left to `make test`), those spread over two worker processes
check: $(DEV_STAMP)
	@$(MAKE) --no-print-directory -j2 check-lint check-tests

check-lint:
	$(BIN)/ruff check evalbatch tests data/samples bench
	$(BIN)/mypy

check-tests:
	$(BIN)/python -m pytest -m "not slow" -n 2 --dist loadfile

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
bench: $(STAMP)
	$(BIN)/python bench/run.py $(if $(EVENTS),--events $(EVENTS)) --shape $(SHAPE) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) out .pytest_cache
