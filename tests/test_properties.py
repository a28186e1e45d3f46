"""The vectorized engine and the per-record reference grader agree on random logs and suites.

Both implement CONTRACT §1.1-§4 independently: the engine in DuckDB SQL and Polars, the reference
(`evalbatch.reference`) one record at a time in plain Python. Every field of every summary must
agree (floats within the RFC's 1e-9 relative tolerance), and so must the set of skipped runs.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from evalbatch.api import grade_events
from evalbatch.options import GradeOptions
from evalbatch.reference import grade_reference
from tests.strategies import logs_and_suites

#: a slow family (hundreds of random logs against the reference):
#: `make check` leaves it out, `make test` runs it
pytestmark = pytest.mark.slow

Case = tuple[list[dict[str, Any]], list[dict[str, Any]]]


def assert_same(engine: Any, reference: Any, where: str = "$") -> None:
    """Equal JSON values, key order included; numbers within 1e-9 relative (RFC 0244 §B)."""
    if isinstance(reference, dict):
        assert isinstance(engine, dict), where
        assert list(engine) == list(reference), f"{where}: keys {list(engine)} != {list(reference)}"
        for key in reference:
            assert_same(engine[key], reference[key], f"{where}.{key}")
    elif isinstance(reference, list):
        assert isinstance(engine, list) and len(engine) == len(reference), where
        for index, (a, b) in enumerate(zip(engine, reference, strict=True)):
            assert_same(a, b, f"{where}[{index}]")
    elif isinstance(reference, bool) or reference is None or isinstance(reference, str):
        assert engine == reference, f"{where}: {engine!r} != {reference!r}"
    else:
        assert not isinstance(engine, bool), where
        tolerance = 1e-9 * max(1.0, abs(reference))
        assert math.isclose(engine, reference, abs_tol=tolerance, rel_tol=0), (
            f"{where}: {engine!r} != {reference!r}"
        )


def _check(
    events: list[dict[str, Any]], suites: list[dict[str, Any]], options: GradeOptions
) -> None:
    reference = grade_reference(events, suites, options)
    engine = grade_events(events, suites, options)
    assert sorted(engine.skipped) == sorted(reference.skipped)
    assert sorted(engine.summaries) == sorted(reference.summaries)
    for run_id, summary in reference.summaries.items():
        assert_same(engine.summaries[run_id], summary, run_id)


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(logs_and_suites())
def test_engine_agrees_with_reference(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """§1.1-§4 on 200 random logs: engine == reference on every summary field."""
    events, suites = case
    _check(events, suites, GradeOptions())


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(logs_and_suites())
def test_engine_agrees_with_reference_under_options(case: Case) -> None:
    """D-9 `--on-miss-default fail` and D-15 `--default-pass-score`: engine == reference."""
    events, suites = case
    _check(events, suites, GradeOptions(default_pass_score=0.5, on_miss_default="fail"))
