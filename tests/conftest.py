"""The fixtures and hooks of the test suite; shared helpers live in tests/helpers.py and the log
builder in tests/logbuilder.py, imported as modules. No test imports this file.
"""

from __future__ import annotations

import os
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


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    """A directory holding the suite `make_suite()` describes."""
    directory = tmp_path / "suites"
    write_json(directory / "basic.json", make_suite())
    return directory
