"""`make run` installs only what the default engine needs (no Ray: a 1.3 GB
environment for a job whose default engine needs none, and no test tools); `make test` adds
the test and Ray extras, which tests/test_ray.py needs. Read from `make -n` (what each target
would run, nothing run), so the Makefile cannot drift from this."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.helpers import ROOT


def _installs(target: str) -> list[str]:
    """The `pip install` commands `make <target>` runs on a fresh clone (every stamp remade)."""
    dry = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [line for line in dry.stdout.splitlines() if re.search(r"pip install .*-e ", line)]


def _extras(command: str) -> set[str]:
    found = re.search(r"-e '?\.\[([^\]]*)\]", command)
    return set(found.group(1).split(",")) if found else set()


def test_make_run_installs_no_extra() -> None:
    installs = _installs("run")
    assert installs, "make run installs nothing"
    assert all(_extras(command) == set() for command in installs), installs
    assert all("-c requirements.lock" in command for command in installs), installs


@pytest.mark.parametrize("target", ["test", "lint"])
def test_make_test_adds_the_dev_and_ray_extras(target: str) -> None:
    installs = _installs(target)
    assert {"dev", "ray"} <= set().union(*map(_extras, installs)), installs
    assert all("-c requirements.lock" in command for command in installs), installs


def _dry(target: str) -> str:
    return subprocess.run(
        ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def test_make_check_lints_and_runs_the_tests_not_marked_slow() -> None:
    """The fast loop is lint (ruff, mypy) and the fast set, bare pytest (tests marked `slow` are
    skipped without `--run-slow`); `make test` and `make test-duckdb` pass `--run-slow` and run
    them all, as CI does, choosing no marker."""
    lint, tests = _dry("check-lint"), _dry("check-tests")
    assert "ruff check" in lint and "mypy" in lint
    assert "pytest" in tests and "--run-slow" not in tests, tests
    assert not re.search(r"pytest .*-m ", tests), tests
    assert "check-lint check-tests" in _dry("check")
    for target in ("test", "test-duckdb"):
        full = [line for line in _dry(target).splitlines() if "pytest" in line]
        assert full and all("--run-slow" in line for line in full), full
        assert not [line for line in full if re.search(r"pytest .*-m ", line)], full


SLOW_FAMILIES = (
    "test_fuzz",
    "test_fault_injection",
    "test_report_browser",
    "test_ray",
    "test_scale",
    "test_extremes",
    "test_nightly",
    "test_properties",
)


@pytest.mark.parametrize("module", SLOW_FAMILIES)
def test_the_slow_families_are_marked(module: str) -> None:
    """The slow families (fuzzing, fault injection, the browser, Ray, scale, extremes) and
    the other sweeps are marked `slow`, so `make check` leaves them to
    `make test`."""
    import importlib

    marks = getattr(importlib.import_module(f"tests.{module}"), "pytestmark", None)
    assert marks is not None and marks.name == "slow", module
