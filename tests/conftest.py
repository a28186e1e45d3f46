"""The fixtures and hooks of the test suite; shared helpers live in tests/helpers.py and the log
builder in tests/logbuilder.py, imported as modules. No test imports this file.

Tests marked `slow` (a family that takes minutes) run only with `--run-slow`: bare `pytest` is the
fast set, `make test` passes `--run-slow` and runs everything (docs/development.md).
"""

from __future__ import annotations

import os

# pytest-xdist runs a worker per core: one Polars thread each, set before Polars is imported,
# keeps the workers from each starting a pool as wide as the machine (a test that is about
# threads sets its own)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("POLARS_MAX_THREADS", "1")
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from evalbatch.commands.resources import environment_extractor
from evalbatch.extract import extractor
from evalbatch.options import Extractor
from tests.helpers import make_suite, write_json

# pytest-xdist (`make check`) hands its workers the controller's terminal width as COLUMNS; the
# commands read their width as a user's do, so a worker starts without it, as a serial run does
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)


# --------------------------------------------------------------------------------------------
# Slow tests are opt-in


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="also run the tests marked slow (make test does); without it they are skipped",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow (make test does)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


# --------------------------------------------------------------------------------------------
# Fixtures


#: the extractor the whole test run names (`make test-duckdb` sets EVALBATCH_EXTRACTOR=duckdb),
#: read once, here, as a command reads it where it starts
RUN_EXTRACTOR = environment_extractor()


@pytest.fixture(autouse=True)
def _extractor_of_the_test_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test run's boundary reads EVALBATCH_EXTRACTOR, as the CLI's does (E-108, E-130).

    The CLI tests get it from the environment; the library never reads it (`Resources()` is
    "auto"), so a test that calls the library without naming an extractor would take the native
    one under `make test-duckdb`. When the run names one, "auto" resolves to it here, so those
    tests take the path the run asked for; an extractor a test names itself is kept."""
    if RUN_EXTRACTOR == "auto":
        return
    resolve = extractor.resolve

    def resolve_for_the_run(choice: Extractor) -> Literal["native", "duckdb"]:
        return resolve(RUN_EXTRACTOR if choice == "auto" else choice)

    monkeypatch.setattr(extractor, "resolve", resolve_for_the_run)


@pytest.fixture(autouse=True, scope="session")
def _inspect_cache_of_the_test_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The Inspect logs the tests grade are converted into a cache of the test run's own
    (E-144), which every command it starts inherits: never the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALBATCH_CACHE_DIR", str(tmp_path_factory.mktemp("evalbatch-cache")))
        yield


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    """A directory holding the suite `make_suite()` describes."""
    directory = tmp_path / "suites"
    write_json(directory / "basic.json", make_suite())
    return directory
