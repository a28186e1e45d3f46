"""D-9: `failed_closed` in the trials table is true or false for every trial, never null: false
for a fixture miss that is only counted (issue 17 item 3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from evalbatch.pipeline.grading import write_result
from tests.logbuilder import Call, LogBuilder, golden, grade, suite

# --------------------------------------------------------------------------------------------
# D-9: failed_closed is a boolean for every trial


@pytest.mark.parametrize(
    ("on_miss", "default", "failed"),
    [
        (None, "count", False),  # the fixed case: was null
        (None, "fail", True),
        ("live", "fail", False),
        ("fail", "count", True),
    ],
)
def test_failed_closed_is_true_or_false_for_a_fixture_miss(
    on_miss: str | None, default: str, failed: bool, tmp_path: Path
) -> None:
    """Issue 17 item 3, D-9: a trial with a fixture miss has failed_closed true when its onMiss,
    as read, is fail, and false otherwise (never null), in `GradeResult` and trials.parquet."""
    block: dict[str, Any] = {"toolResponses": []}
    if on_miss is not None:
        block["onMiss"] = on_miss
    log = LogBuilder()
    log.eval_started()
    log.trial("task-a", calls=[Call("t:x", {})], score=1, passed=True)
    log.eval_completed()
    result = grade(log, [suite(golden("task-a", fixtures=block))], on_miss_default=default)
    write_result(result, tmp_path)
    for trials in (result.trials, pl.read_parquet(tmp_path / "trials.parquet")):
        row = trials.row(0, named=True)
        assert row["fixture_misses"] == 1
        assert row["failed_closed"] is failed
        assert row["passed"] is not failed
