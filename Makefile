# evalbatch: `make run` grades the samples, `make test` runs every test. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help setup browser run test lint fmt samples bench clean

help:
	@echo "make run      set up .venv and grade data/samples into out/samples"
	@echo "make test     set up .venv and run the whole test suite"
	@echo "make lint     ruff check + mypy (config in pyproject.toml)"
	@echo "make fmt      ruff format + fix"
	@echo "make samples  regenerate data/samples (deterministic)"
	@echo "make bench    time floor / evalbatch run / reference side by side (EVENTS=2M)"

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev,ray]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/evalbatch run data/samples/events --suites data/samples/suites --out out/samples; \
	  code=$$?; if [ $$code -ne 0 ] && [ $$code -ne 3 ]; then exit $$code; fi

# the report test renders HTML in Debian's headless Chromium
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

test: $(STAMP) browser
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check evalbatch tests data/samples bench
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff format evalbatch tests data/samples bench
	$(BIN)/ruff check --fix evalbatch tests data/samples bench

samples: $(STAMP)
	$(BIN)/python data/samples/make_samples.py

EVENTS ?= 2M
bench: $(STAMP)
	$(BIN)/python bench/run.py --events $(EVENTS)

clean:
	rm -rf $(VENV) out .pytest_cache
