"""The committed samples grade as data/samples/README.md derives by hand from the contract.

Covers the RFC 0244 conformance cases (§A five trajectory tasks, §B trials with count 3 and k 2,
§D fail-closed miss) end to end, from Parquet files and suite files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalbatch.api import grade_paths

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"


def _close(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        assert set(expected) == set(actual), f"{where}: fields {set(expected) ^ set(actual)}"
        for key, value in expected.items():
            _close(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, bool) or expected is None or isinstance(expected, str):
        assert actual == expected, where
    else:
        assert math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12), (where, actual)


@pytest.fixture(scope="module")
def graded() -> dict[str, dict[str, Any]]:
    result = grade_paths(
        [SAMPLES / "events", SAMPLES / "regress", SAMPLES / "delegates"], [SAMPLES / "suites"]
    )
    assert result.skipped == []
    return result.summaries


def test_every_sample_task_grades_as_derived(graded: dict[str, dict[str, Any]]) -> None:
    """Task entries (trajectory blocks, trials, fixtureMissCount, cost, latency, efficiency)."""
    expected = json.loads((SAMPLES / "expected.json").read_text())
    for run_id, tasks in expected.items():
        entries = {t["taskId"]: t for t in graded[run_id]["tasks"]}
        assert set(entries) == set(tasks)
        for task_id, entry in tasks.items():
            actual = {k: v for k, v in entries[task_id].items() if k != "taskId"}
            _close(entry, actual, f"{run_id}:{task_id}")


def test_every_sample_run_grades_as_derived(graded: dict[str, dict[str, Any]]) -> None:
    """Suite-level fields: aggregateScore, passed, counts, cost, trialStats, model class."""
    expected = json.loads((SAMPLES / "expected_runs.json").read_text())
    assert set(graded) == set(expected)
    for run_id, fields in expected.items():
        # the candidate's `regression` block (§5) is the regress feature's, checked with it
        fields = {k: v for k, v in fields.items() if k != "regression"}
        actual = {k: v for k, v in graded[run_id].items() if k in fields}
        _close(fields, actual, run_id)


def test_rfc_trajectory_cases(graded: dict[str, dict[str, Any]]) -> None:
    """RFC 0244 conformance: an unmatched task must not pass; a trajectory-only task scores 1/0."""
    tasks = {t["taskId"]: t for t in graded["acme/run-trajectory-0001"]["tasks"]}
    assert tasks["in-order-match"]["trajectory"]["matched"] is True
    assert tasks["in-order-match"]["passed"] is True
    for unmatched in ("wrong-order", "forbidden-hit", "exact-args-mismatch"):
        assert tasks[unmatched]["trajectory"]["matched"] is False
        assert tasks[unmatched]["passed"] is False
        # D-10: the reported score stays the output score
        assert tasks[unmatched]["score"] == 1.0
    assert tasks["forbidden-hit"]["trajectory"]["forbiddenCount"] == 1
    assert tasks["subset-repeats"]["score"] == 1
    assert tasks["subset-repeats"]["passed"] is True


def test_fixture_miss_fails_closed(graded: dict[str, dict[str, Any]]) -> None:
    """RFC 0244 §D / D-9: the missed task reports fixtureMissCount 1, score 0, passed false."""
    tasks = {t["taskId"]: t for t in graded["acme/run-fixture-miss-0001"]["tasks"]}
    assert tasks["missed-refund"]["fixtureMissCount"] == 1
    assert tasks["missed-refund"]["passed"] is False
    assert tasks["missed-refund"]["score"] == 0
    assert tasks["served-refund"]["fixtureMissCount"] == 0
    assert tasks["served-refund"]["passed"] is True


def test_e102_the_delegates_sample_reads_its_fanned_out_children(
    graded: dict[str, dict[str, Any]],
) -> None:
    """data/samples/README.md §5: each trial fans out to a child pair merged policy first; the
    children's calls are in the path (matched in order), and a forbidden call made in a child
    fails its trajectory."""
    tasks = {t["taskId"]: t for t in graded["acme/run-delegates-0001"]["tasks"]}
    assert tasks["checked-refund"]["trajectory"]["matched"] is True
    assert tasks["checked-refund"]["trajectory"]["observedCount"] == 4
    assert tasks["guarded-refund"]["trajectory"]["forbiddenCount"] == 1
    assert tasks["guarded-refund"]["passed"] is False
    # the children are runs of their own, never graded as eval runs
    assert not [run for run in graded if "-policy" in run or "-fraud" in run]
